"""Host facts: the live snapshot is sane and serialisable; a fake /proc + /sys tree drives the parsers."""

import json
import os
import resource

import pytest

from rtqual.measure.host import facts as hf
from rtqual.publish.hostview import host_rows

TOP_LEVEL_KEYS = {
    "time_utc",
    "time_ns",
    "hostname",
    "python_version",
    "kernel",
    "preempt",
    "cmdline",
    "cpu",
    "clocksource",
    "cpuidle",
    "virtualization",
    "sched",
    "limits",
    "privileges",
    "devices",
    "smi",  # MSR_SMI_COUNT per CPU, or why not readable
    "memory",
    "load",
    "uptime_s",
    "rpi",
    "tools",
    "unavailable",
}

SUMMARY_LABELS = [
    "Kernel",
    "Preemption",
    "Cmdline RT options",
    "CPU",
    "Online CPUs",
    "Governor/frequency",
    "Clocksource",
    "cpuidle",
    "Virtualization",
    "sched_rt_runtime_us",
    "RT throttling",
    "Limits (rtprio/memlock/rttime)",
    "Privileges",
    "cpu_dma_latency",
    "tracefs",
    "GPIO/UIO",
    "Tools",
    "SMI count",  # facts that read MSR_SMI_COUNT (or say why not)
]

OPTIONAL_LABELS = {"cpufreq range", "Raspberry Pi firmware", "Firmware cmdline"}
"""Rows only where the facts have them (cpufreq limits, a Raspberry Pi's firmware: tests/unit/test_rpi.py)."""

CPU = "sys/devices/system/cpu"


def write_tree(root, files: dict) -> None:
    """Create each relative path under root with its text."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def cpufreq_files(cpu: int, governor: str = "performance", cur_khz: int = 1500000) -> dict:
    """The cpufreq directory of one CPU."""
    base = f"{CPU}/cpu{cpu}/cpufreq"
    return {
        f"{base}/scaling_governor": f"{governor}\n",
        f"{base}/scaling_cur_freq": f"{cur_khz}\n",
        f"{base}/scaling_min_freq": "600000\n",
        f"{base}/scaling_max_freq": "1500000\n",
        f"{base}/cpuinfo_min_freq": "600000\n",
        f"{base}/cpuinfo_max_freq": "1500000\n",
        f"{base}/scaling_available_governors": "conservative ondemand userspace powersave performance schedutil \n",
    }


def fake_host(root, **extra) -> None:
    """A 4-CPU Raspberry-Pi-like host with cpufreq and cpuidle; extra maps relative paths to text."""
    files = {
        "proc/cmdline": "console=ttyS0 isolcpus=2-3 nohz_full=2-3 threadirqs quiet\n",
        "proc/cpuinfo": "processor\t: 0\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd\n\n"
        "Hardware\t: BCM2835\nModel\t\t: Raspberry Pi 4 Model B Rev 1.5\n",
        "proc/device-tree/model": "Raspberry Pi 4 Model B Rev 1.5\x00",
        "proc/meminfo": "MemTotal:        3885396 kB\nMemFree:          100 kB\n",
        "proc/loadavg": "0.50 0.25 0.10 1/200 4321\n",
        "proc/uptime": "123.45 400.00\n",
        "proc/self/status": "Name:\tpython\nCapEff:\t0000000000000000\n",
        "proc/sys/kernel/sched_rt_runtime_us": "950000\n",
        "proc/sys/kernel/sched_rt_period_us": "1000000\n",
        "proc/sys/kernel/timer_migration": "1\n",
        f"{CPU}/online": "0-3\n",
        f"{CPU}/possible": "0-3\n",
        f"{CPU}/isolated": "2-3\n",
        f"{CPU}/cpuidle/current_driver": "psci_idle\n",
        f"{CPU}/cpuidle/current_governor_ro": "menu\n",
        f"{CPU}/cpu0/cpuidle/state0/name": "WFI\n",
        f"{CPU}/cpu0/cpuidle/state0/latency": "1\n",
        f"{CPU}/cpu0/cpuidle/state0/disable": "0\n",
        f"{CPU}/cpu0/cpuidle/state1/name": "cpu-sleep-0\n",
        f"{CPU}/cpu0/cpuidle/state1/latency": "133\n",
        f"{CPU}/cpu0/cpuidle/state1/disable": "1\n",
        "sys/devices/system/clocksource/clocksource0/current_clocksource": "arch_sys_counter\n",
        "sys/devices/system/clocksource/clocksource0/available_clocksource": "arch_sys_counter \n",
    }
    for cpu in range(4):
        files.update(cpufreq_files(cpu))
    files.update(extra)
    write_tree(root, files)


def facts_of(root) -> dict:
    """collect() on a fake tree, checked to be JSON-serialisable on the way."""
    facts = hf.collect(root=root)
    json.dumps(facts)
    return facts


def unavailable_facts(facts: dict) -> set[str]:
    return {entry["fact"] for entry in facts["unavailable"]}


# ---------------------------------------------------------------- live machine


def test_collect_live_is_json_serialisable_and_sane():
    facts = hf.collect(tools={"rtqual": "test"})
    assert set(facts) == TOP_LEVEL_KEYS
    assert json.loads(json.dumps(facts))["kernel"]["release"] == os.uname().release
    online = facts["cpu"]["online_cpus"]
    assert online, "a Linux host has /sys/devices/system/cpu/online"
    assert set(os.sched_getaffinity(0)) <= set(online)
    assert len(online) <= facts["cpu"]["possible_count"]
    assert os.cpu_count() <= facts["cpu"]["possible_count"]
    assert len(facts["cpu"]["per_cpu"]) == len(online)
    assert facts["preempt"]["model"] in {"PREEMPT_RT", "PREEMPT_DYNAMIC", "PREEMPT", "VOLUNTARY", "NONE", "unknown"}
    assert facts["privileges"]["euid"] == os.geteuid()
    assert facts["tools"]["rtqual"] == "test"
    for entry in facts["unavailable"]:
        assert set(entry) == {"fact", "reason"} and entry["reason"]
    rows = host_rows(facts)
    assert [label for label, _ in rows if label not in OPTIONAL_LABELS] == SUMMARY_LABELS
    assert all(isinstance(value, str) and value for _, value in rows)


# ---------------------------------------------------------------- preemption


def test_rt_kernel_detected_from_sys_kernel_realtime(tmp_path):
    fake_host(tmp_path, **{"sys/kernel/realtime": "1\n"})
    preempt = facts_of(tmp_path)["preempt"]
    assert preempt["model"] == "PREEMPT_RT"
    assert preempt["model_source"] == "/sys/kernel/realtime"


def test_dynamic_mode_read_from_debugfs(tmp_path):
    fake_host(tmp_path, **{"sys/kernel/debug/sched/preempt": "none (voluntary) full\n"})
    assert facts_of(tmp_path)["preempt"]["dynamic_mode"] == "voluntary"


@pytest.mark.parametrize(
    "text, mode",
    [
        ("none (voluntary) full", "voluntary"),
        ("(none) voluntary full lazy", "none"),
        ("none voluntary full (lazy)", "lazy"),
        ("none voluntary full", None),
        (None, None),
    ],
)
def test_parse_dynamic_mode(text, mode):
    assert hf.parse_dynamic_mode(text) == mode


@pytest.mark.parametrize(
    "realtime, version, config, model",
    [
        (None, "#1 SMP PREEMPT_RT Debian 6.1.90-1", None, "PREEMPT_RT"),
        (None, "#1 SMP PREEMPT RT Tue", None, "PREEMPT_RT"),
        (None, "#1 SMP PREEMPT_DYNAMIC Debian", None, "PREEMPT_DYNAMIC"),
        (None, "#1 SMP PREEMPT Mon Jan 1", None, "PREEMPT"),
        (None, "#1 SMP Debian 5.10", None, "unknown"),
        (None, "#1 SMP Debian 5.10", "CONFIG_PREEMPT_VOLUNTARY=y\n# CONFIG_PREEMPT is not set\n", "VOLUNTARY"),
        (None, "#1 SMP", "CONFIG_PREEMPT_NONE=y\n", "NONE"),
        (None, "#1 SMP PREEMPT_DYNAMIC", "CONFIG_PREEMPT=y\nCONFIG_PREEMPT_DYNAMIC=y\n", "PREEMPT_DYNAMIC"),
        (None, "#1 SMP", "CONFIG_PREEMPT_RT=y\nCONFIG_PREEMPT=y\n", "PREEMPT_RT"),
        ("1", "#1 SMP PREEMPT_DYNAMIC", None, "PREEMPT_RT"),
    ],
)
def test_preempt_model(realtime, version, config, model):
    assert hf.preempt_model(realtime, version, config)[0] == model


# ---------------------------------------------------------------- cmdline


def test_cmdline_picks_rt_options(tmp_path):
    fake_host(tmp_path)
    facts = facts_of(tmp_path)
    opts = facts["cmdline"]["rt_options"]
    assert facts["cmdline"]["full"].startswith("console=ttyS0 isolcpus=2-3")
    assert opts["isolcpus"] == "2-3"
    assert opts["nohz_full"] == "2-3"
    assert opts["threadirqs"] is True
    assert opts["rcu_nocbs"] is None
    assert set(opts) == set(hf.CMDLINE_KEYS)
    row = dict(host_rows(facts))["Cmdline RT options"]
    assert row == "isolcpus=2-3 nohz_full=2-3 threadirqs"


def test_parse_cmdline_flags_values_and_init_arguments():
    opts = hf.parse_cmdline(
        "nosmt preempt=full intel_idle.max_cstate=0 isolcpus=1 isolcpus=3 -- threadirqs rcu_nocbs=1"
    )
    assert opts["nosmt"] is True
    assert opts["preempt"] == "full"
    assert opts["intel_idle.max_cstate"] == "0"
    assert opts["isolcpus"] == "3", "the last occurrence wins, as in the kernel"
    assert opts["threadirqs"] is False, "words after -- belong to init"
    assert opts["rcu_nocbs"] is None


# ---------------------------------------------------------------- cpu and cpufreq


def test_cpu_facts_and_cpufreq_values(tmp_path):
    fake_host(tmp_path)
    facts = facts_of(tmp_path)
    cpu = facts["cpu"]
    assert cpu["model"] == "BCM2835"
    assert cpu["board"] == "Raspberry Pi 4 Model B Rev 1.5"
    assert cpu["online"] == "0-3" and cpu["online_cpus"] == [0, 1, 2, 3]
    assert cpu["possible_count"] == 4
    assert cpu["isolated"] == "2-3"
    cpu2 = cpu["per_cpu"][2]
    assert cpu2["cpu"] == 2 and cpu2["governor"] == "performance"
    assert cpu2["scaling_cur_freq_khz"] == 1500000
    assert cpu2["scaling_min_freq_khz"] == 600000 and cpu2["cpuinfo_max_freq_khz"] == 1500000
    assert "schedutil" in cpu2["available_governors"]
    assert cpu2["reason"] is None
    assert dict(host_rows(facts))["Governor/frequency"] == "performance, 1500 MHz (all)"


def test_cpufreq_summary_groups_differing_cpus(tmp_path):
    fake_host(tmp_path, **cpufreq_files(3, governor="powersave", cur_khz=800000))
    row = dict(host_rows(facts_of(tmp_path)))["Governor/frequency"]
    assert row == "performance, 1500 MHz (cpu 0-2); powersave, 800 MHz (cpu 3)"


def test_no_cpufreq_recorded_with_reason(tmp_path):
    fake_host(tmp_path)
    for cpu in range(4):
        for path in (tmp_path / CPU / f"cpu{cpu}" / "cpufreq").iterdir():
            path.unlink()
        (tmp_path / CPU / f"cpu{cpu}" / "cpufreq").rmdir()
    facts = facts_of(tmp_path)
    assert all(e["governor"] is None and e["reason"] == "no cpufreq" for e in facts["cpu"]["per_cpu"])
    assert "cpu.per_cpu.cpufreq" in unavailable_facts(facts)
    assert dict(host_rows(facts))["Governor/frequency"] == "not available (no cpufreq)"
    assert not any("cpufreq" in key for key in hf.tunables(facts))


def test_tunables_lists_what_rtqual_may_change(tmp_path):
    fake_host(tmp_path)
    tun = hf.tunables(facts_of(tmp_path))
    assert tun[f"/{CPU}/cpu1/cpufreq/scaling_governor"] == "performance"
    assert tun[f"/{CPU}/cpu3/cpufreq/scaling_min_freq"] == 600000
    assert tun[f"/{CPU}/cpu0/cpufreq/scaling_max_freq"] == 1500000
    assert tun["/proc/sys/kernel/sched_rt_runtime_us"] == 950000
    assert tun["/proc/sys/kernel/timer_migration"] == 1
    assert len(tun) == 4 * 3 + 2


def test_cpuidle_states(tmp_path):
    fake_host(tmp_path)
    facts = facts_of(tmp_path)
    idle = facts["cpuidle"]
    assert idle["driver"] == "psci_idle" and idle["governor"] == "menu"
    states = idle["per_cpu"][0]["states"]
    assert [(s["name"], s["latency_us"], s["disabled"]) for s in states] == [
        ("WFI", 1, False),
        ("cpu-sleep-0", 133, True),
    ]
    assert "cpu-sleep-0 133us (disabled)" in dict(host_rows(facts))["cpuidle"]


# ---------------------------------------------------------------- missing files


def test_missing_files_give_none_and_reasons_without_raising(tmp_path):
    facts = facts_of(tmp_path)  # an empty tree: nothing readable
    assert set(facts) == TOP_LEVEL_KEYS
    assert facts["cmdline"]["full"] is None
    assert facts["cpu"]["online_cpus"] is None and facts["cpu"]["per_cpu"] == []
    assert facts["sched"]["rt_runtime_us"] is None
    assert facts["memory"]["mem_total_kb"] is None
    assert facts["privileges"]["capabilities"] is None
    assert facts["kernel"]["release"] == os.uname().release, "uname comes from the live process"
    missing = unavailable_facts(facts)
    assert {
        "cmdline",
        "cpu.online",
        "sched.rt_runtime_us",
        "clocksource.current",
        "memory",
        "load",
        "uptime_s",
        "devices.tracefs",
        "privileges.cap_eff",
    } <= missing
    by_fact = {e["fact"]: e["reason"] for e in facts["unavailable"]}
    assert "not found" in by_fact["cmdline"]
    rows = host_rows(facts)
    assert [label for label, _ in rows] == SUMMARY_LABELS


def test_unparsable_numbers_are_none_with_reason(tmp_path):
    fake_host(tmp_path, **{"proc/sys/kernel/sched_rt_runtime_us": "lots\n", "proc/loadavg": "x\n"})
    facts = facts_of(tmp_path)
    assert facts["sched"]["rt_runtime_us"] is None
    assert facts["load"]["avg_1m"] is None
    assert {"sched.rt_runtime_us", "load"} <= unavailable_facts(facts)


def test_summary_rows_of_empty_or_old_snapshot():
    rows = host_rows({})
    assert [label for label, _ in rows] == [x for x in SUMMARY_LABELS if x != "SMI count"]  # not recorded: no row
    assert hf.tunables({}) == {}


# ---------------------------------------------------------------- capabilities and privileges


@pytest.mark.parametrize(
    "mask, names",
    [
        ("0000000000000000", []),
        ("0000000000800000", ["CAP_SYS_NICE"]),
        ("0000000000004000", ["CAP_IPC_LOCK"]),
        ("0000000000a21000", ["CAP_NET_ADMIN", "CAP_SYS_RAWIO", "CAP_SYS_ADMIN", "CAP_SYS_NICE"]),
        ("0000200000000001", ["CAP_CHOWN", "CAP_45"]),
    ],
)
def test_decode_caps(mask, names):
    assert hf.decode_caps(mask) == names


def test_decode_caps_all_known_bits():
    names = hf.decode_caps("000001ffffffffff")
    assert len(names) == 41 and names[0] == "CAP_CHOWN" and names[-1] == "CAP_CHECKPOINT_RESTORE"


@pytest.mark.parametrize(
    "cap_eff, rtprio, memlock, fifo, mlock",
    [
        ("0000000000000000", 0, 65536, False, False),
        ("0000000000800000", 0, 65536, True, False),  # CAP_SYS_NICE
        ("0000000000004000", 0, 65536, False, True),  # CAP_IPC_LOCK
        ("0000000000000000", 99, resource.RLIM_INFINITY, True, True),
    ],
)
def test_privileges_from_caps_and_limits(tmp_path, monkeypatch, cap_eff, rtprio, memlock, fifo, mlock):
    fake_host(tmp_path, **{"proc/self/status": f"Name:\tx\nCapEff:\t{cap_eff}\n"})
    limits = {resource.RLIMIT_RTPRIO: (rtprio, rtprio), resource.RLIMIT_MEMLOCK: (memlock, memlock)}
    monkeypatch.setattr(hf.resource, "getrlimit", lambda which: limits.get(which, (0, 0)))
    facts = facts_of(tmp_path)
    assert facts["privileges"]["cap_eff_hex"] == cap_eff
    assert facts["privileges"]["can_sched_fifo"] is fifo
    assert facts["privileges"]["can_mlock"] is mlock
    if memlock == resource.RLIM_INFINITY:
        assert facts["limits"]["memlock_bytes"] == {"soft": "unlimited", "hard": "unlimited"}


# ---------------------------------------------------------------- virtualization, sched, devices


@pytest.mark.parametrize(
    "flags, dmi_vendor, virtualized",
    [
        ("fpu vme hypervisor", None, True),
        ("fpu vme", None, False),
        (None, "QEMU", True),
        (None, None, None),
    ],
)
def test_virtualization_without_running_programs(tmp_path, flags, dmi_vendor, virtualized):
    extra = {}
    if flags is not None:
        extra["proc/cpuinfo"] = f"processor\t: 0\nmodel name\t: Test CPU\nflags\t\t: {flags}\n"
    if dmi_vendor is not None:
        extra["sys/class/dmi/id/sys_vendor"] = f"{dmi_vendor}\n"
    fake_host(tmp_path, **extra)
    virt = facts_of(tmp_path)["virtualization"]
    assert virt["systemd_detect_virt_vm"] is None, "programs are not run for a fake root"
    assert virt["virtualized"] is virtualized


def test_sched_fair_server_and_tracefs_and_devices(tmp_path):
    fake_host(
        tmp_path,
        **{
            "sys/kernel/debug/sched/fair_server/cpu0/runtime": "50000000\n",
            "sys/kernel/debug/sched/fair_server/cpu0/period": "1000000000\n",
            "sys/kernel/tracing/trace_marker": "",
            "sys/kernel/tracing/available_tracers": "timerlat osnoise function nop\n",
            "dev/cpu_dma_latency": "",
            "dev/gpiochip10": "",
            "dev/gpiochip0": "",
            "dev/gpiochip2": "",
            "dev/uio0": "",
        },
    )
    facts = facts_of(tmp_path)
    assert facts["sched"]["fair_server_cpu0_runtime_ns"] == 50000000
    assert facts["sched"]["fair_server_cpu0_period_ns"] == 1000000000
    dev = facts["devices"]
    assert dev["tracefs"] == "/sys/kernel/tracing" and dev["timerlat"] is True
    assert dev["cpu_dma_latency"] is True
    assert dev["gpiochips"] == ["gpiochip0", "gpiochip2", "gpiochip10"]
    assert dev["uio"] == ["uio0"]
    rows = dict(host_rows(facts))
    assert rows["tracefs"] == "/sys/kernel/tracing (timerlat available)"
    assert rows["RT throttling"].startswith("on: RT tasks get at most 95%")
    assert "fair server" in rows["RT throttling"]


def test_rt_throttling_off(tmp_path):
    fake_host(tmp_path, **{"proc/sys/kernel/sched_rt_runtime_us": "-1\n"})
    assert dict(host_rows(facts_of(tmp_path)))["RT throttling"].startswith("off")


def test_smi_counts_are_read_per_cpu_or_said_not_readable(tmp_path):
    """MSR_SMI_COUNT (offset 0x34 of /dev/cpu/N/msr, low 32 bits) per CPU; a case's SMIs are the difference (a
    32-bit counter wraps once at most); no msr device is "not readable", never a number."""
    from rtqual.measure.host.facts import MSR_SMI_COUNT, smi_counts, smi_delta

    for cpu, n in ((0, 5), (1, 2**32 - 1)):
        (tmp_path / "dev" / "cpu" / str(cpu)).mkdir(parents=True)
        (tmp_path / "dev" / "cpu" / str(cpu) / "msr").write_bytes(b"\0" * MSR_SMI_COUNT + n.to_bytes(8, "little"))
    before = smi_counts([0, 1], tmp_path)
    assert before == {"counts": {"0": 5, "1": 2**32 - 1}, "note": None}
    after = {"counts": {"0": 7, "1": 3}, "note": None}
    assert smi_delta(before, after)["per_cpu"] == {"0": 2, "1": 4} and smi_delta(before, after)["total"] == 6
    missing = smi_counts([2], tmp_path)
    assert missing["counts"] is None and missing["note"].startswith("not readable")
    assert smi_delta(missing, missing)["per_cpu"] is None
    assert dict(host_rows({"smi": missing}))["SMI count"].startswith("not readable")
    assert dict(host_rows({"smi": before}))["SMI count"] == "cpu0 5, cpu1 4294967295"
    assert "SMI count" not in dict(host_rows({}))  # facts from before rtqual read it: no row
