"""The environment, stated: hypervisor and container from recorded host trees (tests/data/environment),
the per-case record the sampler keeps (steal, SMT siblings, throttling) and its arithmetic on hand-made
/proc/stat pairs, and the sentences saying what each means for the numbers."""

import json
import os
import shutil
from pathlib import Path

import pytest

from rtqual.answers import environment as env
from rtqual.measure.host import facts as facts_mod
from rtqual.measure.host.sampler import (
    Sampler,
    parse_proc_stat,
    parse_throttled,
    read_samples,
    running_threads,
    summarize,
    thread_siblings,
    trip_points_c,
)

TREES = Path(__file__).resolve().parents[1] / "data" / "environment"


def host(name: str) -> dict:
    """The environment of a recorded tree, as `show --json` states it (no cases)."""
    return env.environment(facts_mod.collect(TREES / name), [], {})


@pytest.mark.parametrize(
    "tree,hypervisor,container,words",
    [
        ("kvm-guest", "kvm", "docker", ["KVM guest", "hypervisor's", "Docker container"]),
        ("bare-metal", "none", "none", ["bare metal"]),
        ("container", "none", "podman", ["bare metal", "Podman container"]),
        ("qemu-tcg", "qemu-tcg", "none", ["emulated QEMU guest", "emulator's"]),
        ("rpi-throttled", "none", "none", ["bare metal"]),
    ],
)
def test_hypervisor_and_container_from_recorded_trees(tree, hypervisor, container, words):
    e = host(tree)
    assert (e["hypervisor"], e["container"]) == (hypervisor, container), (e["hypervisor_source"], e["container_source"])
    assert e["virtualized"] is (hypervisor != "none")
    text = " ".join(env.sentences(e))
    assert all(w in text for w in words), text
    if container == "none":
        assert "container" not in text


def test_systemd_detect_virt_names_win_and_qemu_means_emulated():
    facts = {"virtualization": {"systemd_detect_virt_vm": "qemu", "systemd_detect_virt_container": "lxc"}}
    assert env.hypervisor(facts) == ("qemu-tcg", "systemd-detect-virt: qemu")
    assert env.container(facts)[0] == "lxc"
    facts["virtualization"].update(systemd_detect_virt_vm="microsoft", systemd_detect_virt_container="none")
    assert env.hypervisor(facts)[0] == "hyperv" and env.container(facts)[0] == "none"
    vmware = {"virtualization": {"dmi_sys_vendor": "VMware, Inc.", "cpuinfo_hypervisor_flag": True}}
    assert env.hypervisor(vmware)[0] == "vmware"
    assert env.hypervisor({"virtualization": {"hypervisor_type": "xen"}})[0] == "xen"


def test_old_facts_say_only_what_they_hold():
    assert env.hypervisor(None) == (None, "no host facts")
    old = {"virtualization": {"cpuinfo_hypervisor_flag": True}, "clocksource": {"available": ["tsc", "kvm-clock"]}}
    assert env.hypervisor(old)[0] == "kvm"
    assert env.container(old) == (None, "not recorded")  # older facts have no container files: not guessed
    unknown = env.environment({"virtualization": {}}, [], {})
    assert unknown["hypervisor"] is None and unknown["virtualized"] is None
    assert "not known" in env.sentences(unknown)[0]


def test_trip_points_throttled_flags_and_siblings_from_trees():
    assert trip_points_c(TREES / "rpi-throttled") == {"cpu-thermal": 80.0}
    assert trip_points_c(TREES / "bare-metal") == {"x86_pkg_temp": 95.0}
    assert parse_throttled("throttled=0x50005") == 0x50005 == parse_throttled("50005")
    assert parse_throttled("") is None
    assert thread_siblings(TREES / "bare-metal", [0, 3]) == {"0": [2], "3": [1]}
    assert thread_siblings(TREES / "kvm-guest", [0, 1]) == {"0": [], "1": []}


def test_cpu_shares_arithmetic_on_hand_made_stat_pairs():
    cols = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"]
    a = parse_proc_stat("cpu0 100 0 100 800 0 0 0 0 0 0\nprocs_running 3\n")
    b = parse_proc_stat("cpu0 160 0 120 1000 0 0 0 20 0 0\n")
    assert a["procs_running"] == 3 and a["cpu"]["0"] == [100, 0, 100, 800, 0, 0, 0, 0]
    # 300 ticks passed: 20 stolen, 80 worked, 200 idle
    assert env.cpu_shares(a["cpu"]["0"], b["cpu"]["0"], cols) == {"steal_pct": 6.67, "busy_pct": 26.67}
    assert env.cpu_shares(a["cpu"]["0"], a["cpu"]["0"], cols) is None  # no time: no share
    # an old kernel's shorter line: missing columns are 0
    assert parse_proc_stat("cpu 1 2 3 4\n")["cpu"]["all"] == [1, 2, 3, 4, 0, 0, 0, 0]


def copy_tree(name: str, tmp_path: Path) -> Path:
    root = tmp_path / name
    shutil.copytree(TREES / name, root)
    return root


def later_stat(root: Path, per_cpu: dict[str, list[int]]) -> None:
    """Advance the tree's /proc/stat counters by per-CPU deltas (the case's time passing)."""
    stat = parse_proc_stat((root / "proc/stat").read_text())
    lines = []
    for cpu, ticks in stat["cpu"].items():
        delta = per_cpu.get(cpu, [0, 0, 0, 100, 0, 0, 0, 0])
        lines.append(f"cpu{'' if cpu == 'all' else cpu} " + " ".join(str(t + d) for t, d in zip(ticks, delta)))
    (root / "proc/stat").write_text("\n".join(lines) + "\nprocs_running 4\n")


def record_case(root: Path, tmp_path: Path, cpus: list[int], deltas: dict) -> tuple[dict, dict]:
    """A case's environment record and samples from a tree whose counters advance by deltas meanwhile."""
    sampler = Sampler(tmp_path / "s.jsonl", root=root, record=tmp_path / "environment.json", cpus=cpus)
    sampler.begin()
    later_stat(root, deltas)
    with open(tmp_path / "s.jsonl", "w") as f:
        f.write(json.dumps(sampler.sample()) + "\n")
    sampler.finish()
    assert sampler.errors == 0, sampler.last_error
    return json.loads((tmp_path / "environment.json").read_text()), summarize(read_samples(tmp_path / "s.jsonl"))


def test_bare_metal_record_busy_sibling_and_throttle_counters(tmp_path):
    root = copy_tree("bare-metal", tmp_path)
    # cpu2 (sibling of the measured cpu0) works 60 of 100 ticks; cpu0 idles
    record, samples = record_case(root, tmp_path, [0], {"2": [50, 0, 10, 40, 0, 0, 0, 0]})
    assert record["siblings"] == {"0": [2]} and set(record["end"]["cpu_ticks"]) == {"all", "0", "2"}
    for c in range(4):
        (root / f"sys/devices/system/cpu/cpu{c}/thermal_throttle/core_throttle_count").write_text("5\n")
    result = {"id": "001", "label": "timer idle", "loads": [], "host_samples": samples}
    case = env.case_environment(result, record)  # the record read before the counters moved: no events
    assert case["smt_siblings"] == [{"cpu": 0, "sibling": 2, "measured": False, "busy_pct": 60.0}]
    assert case["steal_pct"] == {"all": 0.0, "cpus": {"0": 0.0}} and case["thermal_throttle_events"] == 0
    said = env.case_sentences(case)
    assert any("cpu0's SMT sibling cpu2 was 60.0 % busy during 'timer idle'" in s for s in said), said
    Sampler(tmp_path / "s.jsonl", root=root, record=tmp_path / "environment.json", cpus=[0]).finish()
    again = json.loads((tmp_path / "environment.json").read_text())
    assert again["end"]["thermal_throttle"] == {"0": 5, "2": 5}


def test_kvm_record_steal_and_an_idle_case_that_was_not(tmp_path):
    root = copy_tree("kvm-guest", tmp_path)
    (root / "proc/loadavg").write_text("51.02 40.10 20.00 9/300 1234\n")
    steal = [30, 0, 10, 50, 0, 0, 0, 10]  # 10 of 100 ticks stolen from cpu1
    record, samples = record_case(root, tmp_path, [1], {"1": steal})
    assert samples["others_running"]["max"] >= 0 and samples["loadavg1_max"] == 51.02
    result = {"id": "001", "label": "timer idle", "loads": [], "host_samples": samples}
    result["host_samples"]["others_running"] = {"min": 2, "max": 5, "mean": 3.0}  # as on a busy shared VM
    case = env.case_environment(result, record)
    assert case["steal_pct"]["cpus"] == {"1": 10.0}
    e = {**env.environment(facts_mod.collect(root), [], {}), "cases": [case]}
    said = env.sentences(e)
    assert said[0].startswith("measured in a KVM guest: maxima include the hypervisor's")
    assert "case 'timer idle' ran at load average 51.02 with 3.0 other runnable tasks on average (at most 5): " \
           "not an idle measurement" in said  # fmt: skip
    assert "steal 10.0 % on cpu1 during 'timer idle': the hypervisor took the CPU" in said
    loaded = env.case_environment({**result, "loads": [{"name": "hackbench"}]}, record)
    assert not any("not an idle" in s for s in env.case_sentences(loaded))  # a loaded case is meant to be busy


def test_throttled_raspberry_pi(tmp_path):
    root = copy_tree("rpi-throttled", tmp_path)
    record, samples = record_case(root, tmp_path, [0, 1, 2, 3], {})
    assert record["start"]["throttled"] == 0x50005 and samples["throttled_flags"] == 0x50005
    case = env.case_environment({"id": "1", "label": "timer stress", "loads": [{}], "host_samples": samples}, record)
    assert case["temperature"] == {"sensor": "cpu-thermal", "max_c": 82.374, "trip_c": 80.0, "hot": True}
    assert case["throttled"]["during"] == ["under-voltage", "throttled"]
    assert case["throttled"]["before"] == ["under-voltage", "throttled"]
    said = " | ".join(env.case_sentences(case))
    assert "temperature 82.374 °C (cpu-thermal) reached its trip point 80 °C during 'timer stress'" in said
    assert "the firmware reported under-voltage, throttled during 'timer stress'" in said


def test_throttled_bits_set_during_the_case_only():
    assert env.throttled_during(0, 0x40000, None) == ["throttled"]  # occurred since start, over by the end
    assert env.throttled_during(0x40000, 0x40000, 0) == []  # before the case, not during
    assert env.throttled_during(None, None, 0x8) == ["soft temperature limit"]


def test_conditions_not_applied_are_stated():
    result = {
        "id": "2",
        "label": "timer hackbench",
        "loads": [{"name": "hackbench"}],
        "conditions": {"changes": [{"condition": "frequency", "after": 1500000, "cpu": 1, "applied": False,
                                    "reason": "not allowed"}, {"condition": "governor", "applied": True}]},
    }  # fmt: skip
    case = env.case_environment(result, None)
    assert case["conditions_not_applied"] == [
        {"condition": "frequency", "value": 1500000, "cpu": 1, "reason": "not allowed"}
    ]
    assert env.case_sentences(case) == [
        "condition frequency (1500000) not applied on cpu1 in 'timer hackbench' (not allowed): the case ran without it"
    ]
    assert case["recorded"] is False and case["steal_pct"] is None and case["smt_siblings"] is None


def test_running_threads_counts_this_process_tree():
    assert running_threads(Path("/"), os.getpid()) >= 1  # this thread, reading
    assert running_threads(Path("/nonexistent"), os.getpid()) == 0


def test_odd_records_and_results_never_stop_show():
    good = {"id": "1", "label": "x", "loads": [], "host_samples": {"loadavg1_max": 0.1}}
    odd_record = {"start": 5, "end": "x", "cpus": "0", "siblings": {"0": 7}}
    e = env.environment(None, [good], {"1": odd_record})
    assert e["cases"][0]["recorded"] is False and "unexpected shape" in e["cases"][0]["problem"]
    odd_result = {"id": "2", "label": "y", "host_samples": {"temps_c": {"t": 5}, "others_running": 3}}
    e = env.environment(None, [odd_result], {})
    assert e["cases"][0]["problem"] == "host samples of an unexpected shape"
    assert env.sentences(e)  # the host sentence still
    strange = {"label": "z", "idle": True, "others_running": {"mean": "many"}}
    assert env.sentences({"hypervisor": "none", "cases": [strange]})[-1].startswith("case 'z': its environment holds")


def test_a_guest_on_its_hosts_tree_is_not_the_hosts_container(tmp_path):
    """scripts/kernel-lab's guests boot on the host's root over 9p/virtiofs: the host's /.dockerenv is in it
    (and systemd-detect-virt believes it), yet the guest's processes are in no container."""
    v = {"systemd_detect_virt_vm": "qemu", "systemd_detect_virt_container": "docker"}
    guest = {"virtualization": {**v, "container_files": {"dockerenv": True, "root_fstype": "9p"}}}
    assert env.container(guest) == ("none", "root file system shared by the VM's host (9p)")
    assert env.hypervisor(guest)[0] == "qemu-tcg"
    docker = {"virtualization": {**v, "container_files": {"dockerenv": True, "root_fstype": "overlay"}}}
    assert env.container(docker)[0] == "docker"
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/mounts").write_text("rootfs / rootfs rw 0 0\n/dev/root / virtiofs ro 0 0\n")
    (tmp_path / ".dockerenv").write_text("")
    files = facts_mod.collect(tmp_path)["virtualization"]["container_files"]
    assert files["root_fstype"] == "virtiofs" and files["dockerenv"] is True
