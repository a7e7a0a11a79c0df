#!/usr/bin/env python3
"""check_prometheus.py: what test_prometheus.sh proves, asked of real Prometheus servers over their
HTTP API (127.0.0.1 only, no proxy).

Polls until every check holds or the deadline passes, then prints one PASS or FAIL line per check
(each rule, each dashboard panel's query, each alert, each federated or remote-written series)
and exits 0 when none failed, 1 otherwise. The rules come from the server that loaded the shipped
file (/api/v1/rules), the panels and variables from the shipped dashboard, so a rule or panel
added to dist/ is checked without changing this file.

  --prom URL            the Prometheus scraping the daemons, with the shipped rules loaded
  --dashboard FILE      dist/grafana/mmlockd.json
  --cgroup PATH         the workload's unit: per-unit rules and panels must have a series for it
  --instance NAME=ADDR  a daemon Prometheus scrapes (repeatable), named in the output
  --optin NAME          the instance that runs the opt-in collectors (mmaplock, faults)
  --firing ALERT=INSTANCE  an alert the test provokes on that instance: must reach firing
  --inactive ALERT      an alert whose condition the test does not provoke: must stay inactive
  --federated URL       a second Prometheus federating from --prom with the docs' snippet
  --remote-write URL    a Prometheus receiving --prom's remote write with the docs' relabeling
  --history URL         a Prometheus with a copy of the rules whose `for:` is shortened and an
                        hour before backfilled for the workload's unit
  --history-firing ALERT, --history-inactive ALERT: there, must fire for that unit / must not
  --rate-interval D     what $__rate_interval becomes (Grafana: 4 scrape intervals or more)
  --seconds S           the deadline
"""
import argparse
import json
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def api(base, path, **params):
    url = base + path + ("?" + urllib.parse.urlencode(params, doseq=True) if params else "")
    try:
        with OPENER.open(url, timeout=10) as r:
            doc = json.load(r)
    except urllib.error.HTTPError as e:
        raise RuntimeError("%s: HTTP %d %s" % (url, e.code, e.read()[:300].decode(errors="replace")))
    if doc.get("status") != "success":
        raise RuntimeError("%s: %s" % (url, doc.get("error")))
    return doc["data"]


def query(base, expr):
    return api(base, "/api/v1/query", query=expr)["result"]


def regex_escape(v):
    """As Grafana escapes a multi-value variable's values for a Prometheus regex inside a PromQL
    string: a regex backslash, itself escaped for the string (127\\.0\\.0\\.1)."""
    return re.sub(r"([\\^$*+?.()|{}\[\]])", r"\\\\\1", v)


def multi(values):
    """A multi-value variable with several values selected: (a|b), as Grafana writes it."""
    vals = [regex_escape(v) for v in values]
    return vals[0] if len(vals) == 1 else "(" + "|".join(vals) + ")"


def short(series, names):
    m = series["metric"]
    inst = names.get(m.get("instance", ""), m.get("instance", "-"))
    rest = ",".join("%s=%s" % (k, v) for k, v in sorted(m.items())
                    if k not in ("instance", "job", "__name__"))
    return "%s%s=%.4g" % (inst, "{" + rest + "}" if rest else "", float(series["value"][1]))


class Checks:
    def __init__(self):
        self.results = {}  # key -> (ok, message), in insertion order

    def put(self, key, ok, msg):
        self.results[key] = (ok, msg)

    def all_ok(self):
        return bool(self.results) and all(ok for ok, _ in self.results.values())


def round_of_checks(a, dash, names):
    c = Checks()
    cg = a.cgroup
    # The targets.
    tg = api(a.prom, "/api/v1/targets")["activeTargets"]
    for name, addr in a.instances:
        h = [t["health"] for t in tg if t["labels"].get("instance") == addr]
        c.put("target " + name, h == ["up"], "target %s (%s): %s" % (name, addr, h))

    # The dashboard's variables, resolved as Grafana does: label_values(METRIC, LABEL).
    var_values = {}
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", q.strip())
        if not m:
            c.put("variable " + v["name"], False, "variable $%s: cannot read %r" % (v["name"], q))
            continue
        sel = m.group(1)
        for k, vals in var_values.items():
            sel = sel.replace("$" + k, multi(vals))
        got = api(a.prom, "/api/v1/label/%s/values" % m.group(2), **{"match[]": sel})
        var_values[v["name"]] = got
        want = [addr for _, addr in a.instances] if v["name"] == "instance" else [cg]
        if v["name"] not in ("instance", "cgroup"):
            want = []
        missing = [w for w in want if w not in got]
        c.put("variable " + v["name"], bool(got) and not missing,
              "variable $%s = %s: %d values %s%s" % (
                  v["name"], q, len(got), got[:4], " missing %s" % missing if missing else ""))
    # The values a user picks: every instance; the workload's unit.
    subst = {"instance": multi([addr for _, addr in a.instances]), "cgroup": multi([cg]),
             "__rate_interval": a.rate_interval}

    # Rules: every recording rule yields a series (per unit: one for the workload's unit).
    groups = api(a.prom, "/api/v1/rules")["groups"]
    rules = [r for g in groups for r in g["rules"]]
    for r in rules:
        if r["type"] != "recording":
            continue
        if r.get("health") != "ok":
            c.put("rule " + r["name"], False, "rule %s: health %s %s" % (
                r["name"], r.get("health"), r.get("lastError", "")))
            continue
        res = query(a.prom, r["name"])
        if r["name"].startswith("cgroup:"):
            mine = [s for s in res if s["metric"].get("cgroup") == cg]
        else:
            mine = res
        c.put("rule " + r["name"], bool(mine), "recording rule %s: %d series%s" % (
            r["name"], len(res), ", the workload's unit: " + "; ".join(short(s, names) for s in mine[:3])
            if mine else " (none for %s)" % cg))

    # Alerts.
    alerts = {r["name"]: r for r in rules if r["type"] == "alerting"}
    for spec in a.firing:
        name, inst = spec.split("=", 1)
        r = alerts.get(name)
        firing = [x for x in (r or {}).get("alerts", []) if x["state"] == "firing"]
        on = [x for x in firing if names.get(x["labels"].get("instance")) == inst]
        c.put("alert " + name, bool(on), "alert %s (provoked on %s): %s%s" % (
            name, inst, r["state"] if r else "not loaded",
            ", " + "; ".join("%s %s since %s" % (names.get(x["labels"].get("instance")),
                                                   x["labels"].get("event", ""), x["activeAt"])
                             for x in on) if on else ""))
    for name in a.inactive:
        r = alerts.get(name)
        c.put("alert " + name, bool(r) and r["state"] == "inactive" and r.get("health") == "ok",
              "alert %s (not provoked): %s, health %s" % (
                  name, r["state"] if r else "not loaded", r.get("health") if r else "-"))

    # The copy with the hour before backfilled: the jump alert fires for the workload's unit.
    if a.history:
        hrules = [r for g in api(a.history, "/api/v1/rules")["groups"] for r in g["rules"]]
        for r in hrules:
            if r["type"] != "alerting" or r["name"] not in a.history_firing + a.history_inactive:
                continue
            on = [x for x in r.get("alerts", []) if x["state"] == "firing" and
                  x["labels"].get("cgroup") == cg]
            want = r["name"] in a.history_firing
            c.put("history " + r["name"], bool(on) == want and r.get("health") == "ok",
                  "alert %s with the hour before backfilled (for: %ss): %s for the workload's "
                  "unit%s" % (r["name"], r.get("duration"), "firing" if on else r["state"],
                              ", value %s since %s" % (on[0]["value"], on[0]["activeAt"])
                              if on else ""))

    # The dashboard's panels: every target's query with the variables substituted returns data;
    # per-unit panels (those reading $cgroup) a series for the workload's unit.
    for p in dash["panels"]:
        for t in p.get("targets", []):
            expr = t["expr"]
            for k in sorted(subst, key=len, reverse=True):
                expr = expr.replace("${%s}" % k, subst[k]).replace("$" + k, subst[k])
            key = "panel %s %s/%s" % (p["id"], p["title"], t.get("refId"))
            try:
                res = query(a.prom, expr)
            except Exception as e:  # a query Prometheus rejects is a failed panel
                c.put(key, False, "panel %r %s: %s" % (p["title"], t.get("refId"), e))
                continue
            if "$cgroup" in t["expr"]:
                res = [s for s in res if s["metric"].get("cgroup") == cg]
            from_insts = sorted({names.get(s["metric"].get("instance"), "?") for s in res})
            note = ""
            if res and from_insts == [a.optin]:
                note = " (opt-in collector: only %s has it)" % a.optin
            c.put(key, bool(res), "panel %r %s: %d series from %s%s: %s" % (
                p["title"], t.get("refId"), len(res), ",".join(from_insts) or "none", note,
                "; ".join(short(s, names) for s in res[:3])))

    # Federation and remote write: every recording rule's series (per unit: the workload's), with
    # the instance label of the daemon it came from (honor_labels), and no raw series but those
    # the docs' relabeling keeps.
    for key, url, keep in (("federated", a.federated, []),
                           ("remote-written", a.remote_write, ["mmlockd_collector_up"])):
        if not url:
            continue
        for r in rules:
            if r["type"] != "recording":
                continue
            res = query(url, r["name"])
            if r["name"].startswith("cgroup:"):
                res = [s for s in res if s["metric"].get("cgroup") == cg]
            ok = bool(res) and all(s["metric"].get("instance") in names for s in res)
            c.put("%s %s" % (key, r["name"]), ok, "%s %s: %d series%s" % (
                key, r["name"], len(res), ", " + "; ".join(short(s, names) for s in res[:2])
                if res else ""))
        raw = query(url, '{__name__=~"mmlockd_.*"}')
        names_raw = sorted({s["metric"]["__name__"] for s in raw})
        c.put(key + " raw", names_raw == keep, "%s raw series: only %s wanted, %d series of %s" % (
            key, keep or "none", len(raw), names_raw[:5]))
    return c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prom", required=True)
    ap.add_argument("--dashboard", required=True)
    ap.add_argument("--cgroup", required=True)
    ap.add_argument("--instance", action="append", default=[])
    ap.add_argument("--optin", default="")
    ap.add_argument("--firing", action="append", default=[])
    ap.add_argument("--inactive", action="append", default=[])
    ap.add_argument("--federated", default="")
    ap.add_argument("--remote-write", default="")
    ap.add_argument("--history", default="")
    ap.add_argument("--history-firing", action="append", default=[])
    ap.add_argument("--history-inactive", action="append", default=[])
    ap.add_argument("--rate-interval", default="1m")
    ap.add_argument("--seconds", type=float, default=90)
    a = ap.parse_args()
    a.instances = [tuple(x.split("=", 1)) for x in a.instance]
    names = {addr: name for name, addr in a.instances}
    with open(a.dashboard) as f:
        dash = json.load(f)

    deadline = time.monotonic() + a.seconds
    t0 = time.monotonic()
    c = None
    while True:
        try:
            c = round_of_checks(a, dash, names)
        except Exception as e:  # a server not ready yet: try again until the deadline
            print("waiting: %s" % e, flush=True)
        if (c and c.all_ok()) or time.monotonic() > deadline:
            break
        time.sleep(3)
    if c is None:
        print("FAIL: no answer from Prometheus within %.0f s" % a.seconds)
        return 1
    print("checked after %.0f s" % (time.monotonic() - t0))
    failed = 0
    for ok, msg in c.results.values():
        print("%s: %s" % ("PASS" if ok else "FAIL", msg))
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
