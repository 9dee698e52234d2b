"""rtqual.publish.fleet's pure parts: the fence, the outliers and the groups of differing facts."""

from rtqual.publish import fleet


def host(name, verdict, kernel, max_ns, preempt="PREEMPT_RT"):
    facts = {name: None for name in fleet.FACTS} | {"kernel": kernel, "preempt": preempt}
    return {"host": name, "verdict": verdict, "facts": facts, "outlier": [], "bundles": [f"b-{name}"], "answer": [],
            "cases": {"timer idle": {"verdict": verdict, "p99_ns": max_ns // 2, "max_ns": max_ns}}}  # fmt: skip


def test_groups_show_the_pattern_of_kernels_and_verdicts():
    hosts = [host(f"h{i}", "pass", "6.1-rt", 50_000) for i in range(6)]
    hosts += [host(f"old{i}", "fail", "5.10", 900_000, preempt="PREEMPT") for i in range(2)]
    groups = {g["fact"]: g["values"] for g in fleet.groups(hosts)}
    assert set(groups) == {"kernel", "preempt"}  # only the facts that differ
    assert groups["kernel"] == [
        {"value": "6.1-rt", "hosts": [f"h{i}" for i in range(6)], "verdicts": {"pass": 6}},
        {"value": "5.10", "hosts": ["old0", "old1"], "verdicts": {"fail": 2}},
    ]
    text = fleet.text({"hosts": hosts, "groups": fleet.groups(hosts)})
    assert "kernel: 6.1-rt (6 hosts: 6 pass); 5.10 (2 hosts: 2 fail)" in text


def test_no_outlier_is_judged_among_three_hosts_and_a_far_host_among_five_is_one():
    three = [host(f"h{i}", "pass", "k", m) for i, m in enumerate([10, 11, 10_000])]
    fleet.mark_outliers(three)
    assert all(h["outlier"] == [] for h in three)
    five = [host(f"h{i}", "pass", "k", m) for i, m in enumerate([10_000, 11_000, 12_000, 10_500, 500_000])]
    fleet.mark_outliers(five)
    assert [h["host"] for h in five if h["outlier"]] == ["h4"]
    assert {o["stat"] for o in five[4]["outlier"]} == {"p99_ns", "max_ns"}
