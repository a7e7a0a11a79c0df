/*
 * The logic of mmlockd's page (index.html). It reads the daemon's JSON API and draws with uPlot:
 *   /api/v1/status     collectors and their states, events, every process's sums in the open
 *                      window (polled every 2 s: ~6 KB, the header and the open window's cards)
 *   /api/v1/processes  one process, live (?pid=&start_time=, its view only; totals' minflt/majflt
 *                      arrive only when the window closes, so they show as pending, not as 0)
 *   /api/v1/series     the range in a few hundred buckets (rates = count / seconds covered)
 *   /api/v1/top        range totals per process or per cgroup, as many rows as are drawn
 *   /api/v1/locks      lock contention by caller for the range (`mmlockd report --locks`); for
 *                      one pid, whom it waited behind for mmap_lock (`mmlockd report --waits`)
 * Range data is fetched again whenever a window closes (windows_stored grows) for the "last ..."
 * ranges. A figure whose collector is not running and that is zero over the range is not shown as
 * 0: the page says which --collectors would collect it. Every figure is in one of three states:
 * measured (plain), estimated (the fault split in bursts: "≈", with a 95% interval per value and
 * the sample it came from) or unknown ("not collected" / "not sampled", with how to get it);
 * never 0 or "exact" for unknown. The overview leads with the processes and units that fall back
 * to mmap_lock most; charts follow, each sized to its card by a ResizeObserver. The URL holds the
 * view and the range (#VIEW/ARGS?range=15m or ?from=T&to=T); without one the range is the last
 * hour, or the time since mmlockd started when that is shorter. Text from the daemon goes
 * through textContent only (el()), never innerHTML. Tests read window.mmlockd (charts, state).
 * One time format everywhere, local "YYYY-MM-DD HH:MM:SS" (axis ticks show its parts). A rate
 * over a range is its counts over the seconds its windows span (first start to last end), and a
 * range takes the windows that ended in it, as `mmlockd report` does; Compare takes A as the
 * baseline (B relative to A, like `report --compare A B` and `perf diff`). Tables fit their
 * cards: columns have priorities, and the lowest go (named under the table) until the rest fit.
 */
"use strict";

const POLL_MS = 2000;
const SERIES_POINTS = 300;
const PROC_LIMIT = 300;
const LEAD_ROWS = 8, LEAD_UNITS = 5; /* the overview's processes and units that fall back most */
const PRESETS = {"15m": 900, "1h": 3600, "24h": 86400, "7d": 7 * 86400};

/* What each figure needs, and the collector that gives it. */
const NEEDS = {
	totals: "Page faults as the kernel counts them (minflt, majflt)",
	fallbacks: "Fallbacks to mmap_lock and the fallbacks that waited",
	vmstat: "System-wide fault counters, vma_lock_* where the kernel has them",
	faults: "The fault split (VMA lock, retries, mmap_lock) and how long faults waited",
	mmaplock: "mmap_lock acquisitions, waits, wait and write-hold time",
	contention: "Lock contention by kernel caller, and who held mmap_lock in each wait",
};

const state = {
	status: null, stored: -1, range: "auto", custom: null, view: "overview",
	arg: [], sort: {}, filter: "", compareB: "previous", compareCustom: null, renderId: 0,
	latency: {}, /* the last fault latency seen per process (pid/start), kept after it exits */
	editing: false, /* the from/to fields were typed in: refreshes leave them alone */
};
const charts = {};
window.mmlockd = {charts, state};

function $(id) { return document.getElementById(id); }

function el(tag, text, cls) {
	const e = document.createElement(tag);
	if (text !== undefined && text !== null) e.textContent = String(text);
	if (cls) e.className = cls;
	return e;
}

function css(name) { return getComputedStyle(document.documentElement).getPropertyValue(name).trim(); }

/* ---- formatting ---- */

function fmtNum(v) {
	if (v === undefined || v === null || Number.isNaN(v)) return "–";
	const a = Math.abs(v);
	const u = a >= 1e9 ? [1e9, "G"] : a >= 1e6 ? [1e6, "M"] : a >= 1e4 ? [1e3, "k"] : null;
	if (u) {
		const x = v / u[0];
		return (Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(2)) + u[1];
	}
	if (Number.isInteger(v) || a >= 100) return Math.round(v).toLocaleString("en-US");
	return a >= 10 ? v.toFixed(1) : a >= 0.01 || a === 0 ? v.toFixed(2) : v.toExponential(1);
}

function fmtPct(v) {
	if (v === undefined || v === null || Number.isNaN(v)) return "–";
	return (v === 0 ? "0" : v < 0.1 ? v.toFixed(3) : v < 10 ? v.toFixed(2) : v.toFixed(1)) + " %";
}

function fmtNs(ns) {
	if (ns === undefined || ns === null || Number.isNaN(ns)) return "–";
	const a = Math.abs(ns);
	if (a === 0) return "0";
	if (a >= 1e9) return (ns / 1e9).toFixed(a >= 1e10 ? 1 : 2) + " s";
	if (a >= 1e6) return (ns / 1e6).toFixed(a >= 1e8 ? 0 : a >= 1e7 ? 1 : 2) + " ms";
	if (a >= 1e3) return (ns / 1e3).toFixed(a >= 1e5 ? 0 : 1) + " µs";
	return ns.toFixed(0) + " ns";
}

function fmtDuration(s) {
	s = Math.max(0, Math.floor(s));
	const d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
	if (d) return d + "d " + h + "h";
	if (h) return h + "h " + m + "m";
	if (m) return m + "m " + (s % 60) + "s";
	return s + "s";
}

const pad2 = n => String(n).padStart(2, "0");
/* The page's one time format: local "YYYY-MM-DD HH:MM:SS" (day and clock are its two halves). */
const fmtDay = d => d.getFullYear() + "-" + pad2(d.getMonth() + 1) + "-" + pad2(d.getDate());
const fmtClock = d => pad2(d.getHours()) + ":" + pad2(d.getMinutes()) + ":" + pad2(d.getSeconds());
function fmtTime(t) {
	const d = new Date(t * 1000);
	return fmtDay(d) + " " + fmtClock(d);
}

/* The from/to fields are text in the same format (a datetime-local field would show the
 * browser's locale's own). */
const toLocalInput = fmtTime;
function fromLocalInput(s) {
	const m = /^\s*(\d{4})-(\d{1,2})-(\d{1,2})[ T](\d{1,2}):(\d{2})(?::(\d{2}))?\s*$/.exec(s);
	if (!m) return null;
	const t = new Date(+m[1], m[2] - 1, +m[3], +m[4], +m[5], +(m[6] || 0)).getTime();
	return Number.isNaN(t) ? null : t / 1000;
}

/* Tick labels of a time axis @incr seconds apart: the clock part of fmtTime (seconds only when
 * ticks are under a minute apart), the day under the first tick and where the day changes, the
 * day alone for ticks a day or more apart. */
function timeTicks(u, splits, ax, space, incr) {
	let day = null;
	return splits.map(t => {
		const d = new Date(t * 1000), dd = fmtDay(d);
		if (incr >= 86400) return dd;
		const clock = incr < 60 ? fmtClock(d) : fmtClock(d).slice(0, 5);
		const label = dd !== day ? clock + "\n" + dd : clock;
		day = dd;
		return label;
	});
}

/* ---- data ---- */

async function getJSON(url) {
	const r = await fetch(url, {cache: "no-store"});
	let body = null;
	try { body = await r.json(); } catch (e) { /* not JSON */ }
	if (!r.ok) {
		const err = new Error(body && body.error ? body.error : "HTTP " + r.status);
		err.status = r.status;
		throw err;
	}
	return body;
}

function qs(params) {
	return Object.entries(params).filter(([, v]) => v !== undefined && v !== null)
		.map(([k, v]) => encodeURIComponent(k) + "=" + encodeURIComponent(v)).join("&");
}

/* The counters the page shows: the store sums only these (most of a long range's cost). */
const FIELDS = ["minflt", "majflt", "faults", "fallback_locks", "fallback_lock_waits", "faults_vma",
	"faults_vma_retry", "faults_mmap_retry", "faults_mmap_abort", "faults_mmap_unknown",
	"faults_mmap_fallback", "faults_mmap_lock_wait_ns", "mmap_lock_waits", "mmap_lock_wait_ns",
	"mmap_lock_write_hold_ns", "split_estimated", "split_faults_seen", "split_fallbacks_seen", "split_err", "split_err_fallbacks",
	"kernel_mode_faults"].join(",");

const PER_COMMAND_FIELDS = "minflt,majflt,faults,fallback_locks";

/* The fault outcomes, as the API names their latency quantiles (fault_ns_outcome_O_p50), and the
 * one name each has on the page. */
const OUTCOMES = ["vma", "vma_retry", "mmap_retry", "mmap_abort", "mmap_unknown"];
const UNSEPARATED = "mmap_lock, retry or abort";
const OUTCOME_NAMES = {vma: "VMA lock", vma_retry: "VMA lock, retried", mmap_retry: "mmap_lock, retry",
	mmap_abort: "mmap_lock, abort", mmap_unknown: UNSEPARATED};

/* What an mmap_lock holder was doing (holder_op of /api/v1/locks, the <op> of the counters
 * mmap_lock_behind_<op>_ns), in the daemon's order, with what each means (docs/contention.md). */
const HOLDER_OPS = {
	fault: "a page fault of the process: a fallback reader, or a writer expanding the stack",
	fault_other: "inside a fault handled under the VMA lock",
	fault_kernel: "a fault in kernel mode (a system call touching user memory)",
	mmap: "mmap()", munmap: "munmap()", mremap: "mremap()", mprotect: "mprotect()", madvise: "madvise()",
	brk: "brk()", mlock: "mlock()", mincore: "mincore()", exit: "exiting", fork: "fork()", exec: "exec()",
	remote: "another process reading this one's memory (/proc/PID/smaps, ptrace, khugepaged)",
	other: "another kernel path", unknown: "no holder could be named (it let go as the wait began, exited, or was not seen)",
};
const behindKey = op => "mmap_lock_behind_" + op + "_ns";
/* Only the process view asks for these (the contention collector's, opt-in): the overview's
 * requests, over every process, stay as cheap as they were. */
const BEHIND_FIELDS = ["mmap_lock_behind_waits"].concat(Object.keys(HOLDER_OPS).map(behindKey)).join(",");

/* GET /api/v1/series or /api/v1/top with @params and the page's counters (and @more); a range
 * takes the windows that ended in it (ended=1), as `mmlockd report` does, so two ranges that meet
 * share none. */
function api(route, params, more) {
	return getJSON("api/v1/" + route + "?" + qs({...params, ended: 1, fields: more ? FIELDS + "," + more : FIELDS}));
}

/* The chosen range as {since, until} in unix seconds. "auto" (no range chosen): the last hour,
 * or since mmlockd started (at least 10 windows, or a minute) when it is younger than that, so a new daemon's data
 * is not squeezed into a sliver. */
function rangeA() {
	if (state.range === "custom" && state.custom) return state.custom;
	const now = Date.now() / 1000;
	if (state.range === "auto") {
		const st = state.status, len = PRESETS["1h"];
		if (st && st.started && now - st.started < len)
			return {since: Math.min(st.started - (st.interval_seconds || 0), now - Math.max(60, 10 * (st.interval_seconds || 1))), until: now};
		return {since: now - len, until: now};
	}
	return {since: now - PRESETS[state.range], until: now};
}

/* Whether the "auto" range is the time since start (the daemon is younger than an hour). */
function autoSinceStart() {
	const st = state.status;
	return state.range === "auto" && !!st && !!st.started && Date.now() / 1000 - st.started < PRESETS["1h"];
}

function rangeB(a) {
	if (state.compareB === "custom" && state.compareCustom) return state.compareCustom;
	const len = a.until - a.since;
	return {since: a.since - len, until: a.since};
}

function rangeText(r) {
	return fmtTime(r.since) + " – " + fmtTime(r.until) + " (" + fmtDuration(r.until - r.since) + ")";
}

/* A series reply as columns: cols[name][k], plus t (bucket end) and gaps as nulls so lines break
 * where no window was stored. */
function columns(reply) {
	const s = reply.series, idx = {};
	s.columns.forEach((c, i) => { idx[c] = i; });
	const cols = {};
	for (const c of s.columns) cols[c] = [];
	let prev = null;
	for (const row of s.rows) {
		const t = row[idx.ts_end];
		if (prev !== null && t - prev > 2.5 * Math.max(s.step, row[idx.ts_end] - row[idx.ts_start])) {
			for (const c of s.columns) cols[c].push(c === "ts_end" ? (prev + t) / 2 : null);
		}
		for (const c of s.columns) cols[c].push(row[idx[c]]);
		prev = t;
	}
	cols.t = cols.ts_end;
	cols.n = s.rows.length;
	return cols;
}

const sum = a => a.reduce((x, y) => x + (y || 0), 0);

/* The seconds a series' windows cover (their lengths added up, so a gap in the history is not
 * time in which nothing happened): what a rate over the range divides by, as `mmlockd report`
 * does. */
function spanSeconds(cols) {
	return sum(cols.seconds || []);
}

/* Totals of a series (for stat cards and compare). */
function totals(cols) {
	const t = {};
	for (const k of Object.keys(cols)) if (Array.isArray(cols[k])) t[k] = sum(cols[k]);
	return t;
}

function running(name) {
	return !!(state.status && (state.status.collectors || []).some(c => c.name === name && c.state === "running"));
}

function collectorsWith(name) {
	const names = (state.status ? state.status.collectors : []).filter(c => c.state === "running").map(c => c.name);
	if (!names.includes(name)) names.push(name);
	return "--collectors " + names.join(",");
}

/* Faults of a row/total: the kernel's count (totals) or, without it, the page_fault_user events. */
function faultsOf(t) { return (t.minflt || 0) + (t.majflt || 0) || t.faults || 0; }

/* Whether figure @keys of collector @col can be shown: it runs now, or the range holds data. */
function shown(col, t, keys) {
	return running(col) || keys.some(k => (t[k] || 0) > 0);
}

/* The fault split's mode now: "continuous" (exact outcomes), "bursts" (estimates) or "off". */
function splitMode() { return state.status && state.status.split ? state.status.split.mode : "off"; }

/* Whether the fallbacks' own mmap_lock wait (faults_mmap_lock_wait_ns) is collected: only with
 * the split continuous (bursts have no exact total to scale it to), or when the range holds it. */
function faultWaitCollected(t) { return splitMode() === "continuous" || (t.faults_mmap_lock_wait_ns || 0) > 0; }

const HOW_FAULT_WAIT = "--split-duty 100%";

/* The state of a row's (process, unit, range) fault split, from the counters it already has:
 *   {kind: "exact"}      outcomes classified one by one (split continuous)
 *   {kind: "estimated"}  split_estimated windows: shares seen in bursts applied to exact totals;
 *                        err is the 95% bound on each outcome (the largest), errFb the one on
 *                        each fallback outcome (the row's where windows lack their own), seen the
 *                        sample, kernelMode the faults taken in kernel mode (no VMA-lock attempt:
 *                        not fallbacks, estimated beside the outcomes)
 *   {kind: "unknown"}    no window of it was classified (no burst caught it), or nobody classifies
 * and notSampled: the faults of its windows that no estimate covers, so that the outcomes,
 * kernelMode and notSampled add up to its fault count. */
function splitState(r) {
	const outs = OUTCOMES.reduce((a, o) => a + (r["faults_" + o] || 0), 0);
	const total = faultsOf(r);
	if ((r.split_estimated || 0) > 0) {
		const kernelMode = r.kernel_mode_faults || 0;
		return {kind: "estimated", outs, err: r.split_err || 0, errFb: r.split_err_fallbacks || r.split_err || 0,
			seen: r.split_faults_seen || 0, windows: r.split_estimated, kernelMode,
			notSampled: Math.max(0, total - outs - kernelMode)};
	}
	if (outs > 0 && splitMode() !== "bursts") return {kind: "exact", outs, notSampled: 0};
	return {kind: "unknown", outs: 0, notSampled: total,
		why: {off: "not collected", bursts: "not sampled"}[splitMode()] || "none classified"};
}

/* The 95% interval of estimate @v whose bound is @err, within [0, @cap] (the exact count of its
 * side: no outcome can exceed the faults or fallbacks it is a share of). */
function estInterval(v, err, cap) {
	return [Math.max(0, v - err), Math.min(cap === undefined ? Infinity : cap, v + err)];
}

/* An estimated value as text: "≈ V (lo–hi)", or its bound alone when it cannot be told from 0. */
function fmtEst(v, err, cap) {
	const [lo, hi] = estInterval(v, err, cap);
	if (inseparable(v, err)) return "≤ " + fmtNum(hi) + " (too few sampled)";
	return "≈ " + fmtNum(v) + " (" + fmtNum(lo) + "–" + fmtNum(hi) + ")";
}

/* What a running collector says about itself (e.g. that it cannot attribute fallbacks on this
 * kernel or next to another probe), as a note under its charts; null when it says nothing. */
function collectorNote(name) {
	const c = state.status && (state.status.collectors || []).find(x => x.name === name);
	return c && c.state === "running" && c.reason ? el("div", name + " collector: " + c.reason, "note warn") : null;
}

function optIn(col, what) {
	const d = el("div", null, "optin");
	d.append(el("div", (what || NEEDS[col]) + ": not collected."));
	const p = el("div", "Run mmlockd with ");
	p.append(el("code", collectorsWith(col)), document.createTextNode(" to collect it."));
	d.append(p);
	return d;
}

/* ---- charts ---- */

function axisOpts(unit, fmt) {
	const fg = css("--muted"), line = css("--line");
	return {
		stroke: fg, grid: {stroke: line, width: 1}, ticks: {stroke: line, width: 1},
		label: unit, labelSize: unit ? 18 : 0, size: 60,
		values: fmt ? (u, vals) => vals.map(v => v === null ? "" : fmt(v)) : undefined,
	};
}

/* The width inside @box's padding, which is what a chart in it may take. */
function contentWidth(box) {
	const cs = getComputedStyle(box);
	return Math.max(160, Math.floor(box.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight)));
}

/* Every chart follows its card's width: the card's size is known only once the grid holds all
 * its cards (and changes with the window), so a chart is resized whenever its card is. */
const resizer = new ResizeObserver(entries => {
	for (const e of entries) {
		const u = e.target.uplot;
		if (!u) continue;
		const w = contentWidth(e.target);
		if (Math.abs(u.width - w) >= 1) u.setSize({width: w, height: CHART_H});
	}
});
const CHART_H = 220;
const TIME_INCRS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
	43200, 86400, 2 * 86400, 7 * 86400, 14 * 86400, 30 * 86400];

/* The last non-null value of @arr and its index, or null. */
function lastOf(arr) {
	for (let i = (arr || []).length - 1; i >= 0; i--) if (arr[i] !== null && arr[i] !== undefined) return i;
	return null;
}

/* @lines' values stacked: each line's points on top of those before it (a gap, null, stays one in
 * every line), and the bands that fill each line down to the one below it (uPlot's stacking). */
function stack(lines) {
	const acc = [];
	const data = lines.map(l => l.values.map((v, i) => {
		if (v === null || v === undefined) return null;
		acc[i] = (acc[i] || 0) + v;
		return acc[i];
	}));
	const bands = lines.slice(1).map((l, i) => ({series: [i + 2, i + 1]}));
	return {data, bands};
}

/* Whether estimate @v with 95% bound ±@err carries too little to be drawn or printed as a number:
 * its interval [v - err, v + err] is wider than the value. Such are the estimates scaled from a
 * handful of classified faults (1 of 1 classified a retry: the whole window's faults, ±79%),
 * which drew 20k/s spikes of "VMA lock, retried" where the exact count was 0. Not drawn (a line
 * through it reads as a measurement); its legend gives its upper bound. */
const inseparable = (v, err) => err > 0 && 2 * err > v;

/* A legend's text for point @k of line @l (values formatted by @f in @unit): "≈" before an
 * estimate, "not separable" with its upper bound for one inseparable() from 0. */
function legendValue(l, k, f, unit) {
	const x = l.values[k];
	if (x === null || x === undefined) return "–";
	if (!l.est || !l.est[k]) return f(x) + " " + unit;
	const err = l.err ? l.err[k] || 0 : 0;
	if (inseparable(x, err)) return "too few sampled (≤ " + f(x + err) + " " + unit + ")";
	return "≈ " + f(x) + " " + unit;
}

/* Draws (or redraws) chart @id in @box over the range @xr ({since, until}): x = bucket end times,
 * @lines = [{label, values, color, est, err}], y values formatted by @fmt (fmtNum by default).
 * A line with est (per point: an estimate) and err (its 95% bound) draws only the estimates that
 * are not inseparable() from 0, and its legend marks estimates with "≈". @more: stacked (areas on
 * top of each other, parts of one total, the first line at the bottom), yMax (a y scale shared
 * with another chart), lastLabel (what the legend's untouched time says: "latest" by default).
 * Until the cursor is on it, its legend shows the latest point, not dashes; a stacked legend
 * shows each line's own value, not its height in the stack. */
function drawChart(id, box, xr, title, unit, xs, lines, fmt, more) {
	const o = more || {};
	if (charts[id]) {
		const old = charts[id].root.parentElement;
		if (old) { resizer.unobserve(old); old.uplot = null; }
		charts[id].destroy();
		delete charts[id];
	}
	box.replaceChildren();
	box.classList.add("chart");
	if (!xs.length) {
		box.append(el("h3", title), el("div", "no stored windows in this range yet", "nodata"));
		return null;
	}
	const colors = ["--c1", "--c2", "--c3", "--c4", "--c5", "--c6"];
	const f = fmt || fmtNum;
	const latest = lastOf(xs);
	const yr = o.yMax > 0 ? () => [0, o.yMax * 1.08] : (u, min, max) => [0, max > 0 ? max * 1.08 : 1];
	const opts = {
		title, width: contentWidth(box), height: CHART_H,
		scales: {x: {time: true, range: () => [xr.since, xr.until]}, y: {range: yr}},
		/* Ticks a whole number of seconds apart: windows are 1 s at the least, and a short range
		 * would otherwise be ticked in milliseconds (":36.500"). */
		axes: [Object.assign(axisOpts("", null), {incrs: TIME_INCRS, values: timeTicks, size: 48, space: 90}), axisOpts(unit, f)],
		series: [{label: "Time", value: (u, v, si, idx) => idx === null || idx === undefined
			? (latest === null ? "–" : (o.lastLabel || "latest") + ", " + fmtTime(xs[latest])) : v === null ? "–" : fmtTime(v)}]
			.concat(lines.map((l, i) => ({
				label: l.label, stroke: css(l.color || colors[i % colors.length]), width: o.stacked ? 1 : 1.5,
				fill: o.stacked ? css(l.color || colors[i % colors.length]) + "99"
					: lines.length === 1 ? css(l.color || colors[0]) + "22" : undefined,
				points: {show: xs.length < 60},
				value: (u, v, si, idx) => {
					if (idx === null || idx === undefined) {
						const k = lastOf(l.values);
						return k === null ? "no data" : legendValue(l, k, f, unit);
					}
					return legendValue(l, idx, f, unit);
				},
			}))),
		legend: {live: true},
		cursor: {drag: {x: true, y: false}},
		hooks: {setSelect: [u => {
			if (u.select.width < 5) return;
			const since = u.posToVal(u.select.left, "x"), until = u.posToVal(u.select.left + u.select.width, "x");
			setCustom({since, until});
		}]},
	};
	let ys = lines.map(l => !l.est ? l.values : l.values.map((v, k) =>
		l.est[k] && inseparable(v, l.err ? l.err[k] || 0 : 0) ? null : v));
	if (o.stacked) {
		const st = stack(lines);
		ys = st.data;
		opts.bands = st.bands;
	}
	const u = new uPlot(opts, [xs].concat(ys), box);
	u.mmLines = lines; /* what was asked to be drawn, estimates' flags and bounds included */
	charts[id] = u;
	box.uplot = u;
	resizer.observe(box);
	return u;
}

/* The largest value of @lines (for a y scale two charts share). */
const maxOf = lines => Math.max(0, ...lines.flatMap(l => l.values.filter(v => v !== null && v !== undefined)));

const rate = (cols, k) => cols[k].map((v, i) => v === null ? null : cols.seconds[i] > 0 ? v / cols.seconds[i] : 0);

/* The charts of a series (overview, one process, one unit): faults/s, fallbacks, the split, wait;
 * @more as drawChart's (lastLabel). */
function seriesCharts(prefix, cols, grid, xr, more) {
	const t = totals(cols), xs = cols.t;
	const boxes = [];
	const add = () => { const b = el("section", null, "card"); grid.append(b); boxes.push(b); return b; };

	if (shown("totals", t, ["minflt", "majflt"])) {
		drawChart(prefix + "faults", add(), xr, "Page faults", "faults/s", xs, [
			{label: "minor", values: rate(cols, "minflt")},
			{label: "major", values: rate(cols, "majflt"), color: "--c4"},
		], null, more);
	} else if (shown("mmaplock", t, ["faults"])) {
		drawChart(prefix + "faults", add(), xr, "Page faults (page_fault_user events)", "faults/s", xs,
			[{label: "faults", values: rate(cols, "faults")}], null, more);
	} else add().append(el("h3", "Page faults"), optIn("totals"));

	if (shown("fallbacks", t, ["fallback_locks", "fallback_lock_waits"])) {
		const share = cols.fallback_locks.map((v, i) => {
			if (v === null) return null;
			const f = (cols.minflt[i] || 0) + (cols.majflt[i] || 0) || cols.faults[i] || 0;
			return f > 0 ? 100 * v / f : 0;
		});
		const sbox = add();
		drawChart(prefix + "share", sbox, xr, "Fallback share: faults that took mmap_lock", "%", xs,
			[{label: "fallback share", values: share, color: "--c2"}], fmtPct0, more);
		const note = collectorNote("fallbacks");
		if (note) sbox.append(note);
		drawChart(prefix + "fallbacks", add(), xr, "Fallbacks to mmap_lock", "per s", xs, [
			{label: "fallbacks", values: rate(cols, "fallback_locks"), color: "--c2"},
			{label: "waited for the lock", values: rate(cols, "fallback_lock_waits"), color: "--c4"},
		], null, more);
	} else add().append(el("h3", "Fallbacks to mmap_lock"), optIn("fallbacks"));

	const split = OUTCOMES.map((o) => "faults_" + o);
	const ss = splitState(t);
	if (shown("faults", t, split) && ss.kind === "unknown") {
		const b = add();
		b.id = prefix + "split-unknown";
		b.append(el("h3", "Fault split: how faults completed"), notSampled(ss));
	} else if (shown("faults", t, split)) {
		/* One panel per side of the split, each on its own linear scale: the fallbacks (mmap_lock)
		 * are 2-4 orders of magnitude below the faults under the VMA lock, and beside them drew
		 * flat at 0; a log axis would hide their zeros instead (a vanilla kernel's "VMA lock,
		 * retried" is 0, and says so). Each side's total is exact (the faults that did not fall
		 * back, and the fallbacks): in bursts only its division is estimated (≈), with the
		 * bucket's 95% bound. */
		const est = cols.split_estimated.map(v => v > 0);
		const err = rate(cols, "split_err"), errFb = fallbackErr(cols);
		const line = (o, color) => ({label: OUTCOME_NAMES[o], values: rate(cols, "faults_" + o), color, est,
			err: o.startsWith("vma") ? err : errFb});
		const box = add();
		box.id = prefix + "split-box";
		drawChart(prefix + "split", box, xr, "Fault split: under the VMA lock", "faults/s", xs,
			[line("vma", "--c3"), line("vma_retry", "--c1")], null, more);
		const fbox = add();
		drawChart(prefix + "split-fb", fbox, xr, "Fault split: under mmap_lock, how they fell back", "faults/s", xs,
			[line("mmap_retry", "--c2"), line("mmap_abort", "--c4"), line("mmap_unknown", "--c5")], null, more);
		const note = splitNote(t, cols);
		if (note) fbox.append(note);
	} else add().append(el("h3", "Fault split"), optIn("faults"));

	const fwait = running("faults") && faultWaitCollected(t);
	if (fwait || shown("mmaplock", t, ["mmap_lock_wait_ns"])) {
		const lines = [];
		if (fwait)
			lines.push({label: "faults waiting for mmap_lock", values: rate(cols, "faults_mmap_lock_wait_ns").map(nsToMs), color: "--c4"});
		if (shown("mmaplock", t, ["mmap_lock_wait_ns"]))
			lines.push({label: "every mmap_lock wait", values: rate(cols, "mmap_lock_wait_ns").map(nsToMs), color: "--c5"});
		drawChart(prefix + "wait", add(), xr, "mmap_lock wait", "ms/s", xs, lines, null, more);
	} else if (running("faults")) {
		add().append(el("h3", "mmap_lock wait"), unknownBox("How long fallbacks waited for mmap_lock: not collected while the " +
			"split runs in bursts (they have no exact total to scale to).", HOW_FAULT_WAIT));
	} else add().append(el("h3", "mmap_lock wait"), optIn("faults", "How long faults waited for mmap_lock"));
	return boxes;
}

/* Per point of @cols, per second: the 95% bound of the fallback outcomes (split_err_fallbacks; the
 * row's split_err where a bucket's windows were stored without it). */
function fallbackErr(cols) {
	const fb = rate(cols, "split_err_fallbacks"), all = rate(cols, "split_err");
	return fb.map((v, i) => v > 0 ? v : all[i]);
}

/* An "unknown" box: what is not known and the flag that gets it. */
function unknownBox(text, how) {
	const d = el("div", null, "optin");
	d.append(el("div", text));
	if (how) {
		const p = el("div", "Run mmlockd with ");
		p.append(el("code", how), document.createTextNode(" to collect it."));
		d.append(p);
	}
	return d;
}

/* Why a split is unknown, as a box. */
function notSampled(ss) {
	if (ss.why === "not collected") return optIn("faults");
	if (ss.why === "none classified")
		return unknownBox("No fault of it was classified in this range: none of its faults was a user fault the split saw.");
	return unknownBox("Not sampled: no burst of the fault split caught a fault of it in this range, so how its " +
		fmtNum(ss.notSampled) + " faults completed is unknown (not 0).", HOW_FAULT_WAIT);
}

/* Where the fault split ran in bursts (the default) its figures are estimates: says so, with the
 * sample they come from, a 95% interval per outcome, the faults no burst covered (docs/accuracy.md,
 * "The split in the default") and how many of the charts' points (@cols) were not drawn because
 * their interval reaches 0. */
function splitNote(t, cols) {
	const ss = splitState(t);
	if (ss.kind !== "estimated") return null;
	const s = state.status && state.status.split;
	const how = s && s.mode === "bursts" ? " (bursts of " + s.duty_permille / 10 + "% of each window)" : "";
	const fb = t.faults_mmap_fallback || 0, vmaSide = Math.max(0, ss.outs - fb);
	const parts = OUTCOMES.map(o => [OUTCOME_NAMES[o], t["faults_" + o] || 0, o.startsWith("vma") ? vmaSide : fb])
		.filter(([, v, cap]) => v > 0 || cap > 0)
		.map(([n, v, cap]) => n + " " + fmtEst(v, n.startsWith("VMA") ? ss.err : ss.errFb, cap));
	let hidden = 0;
	const errFb = fallbackErr(cols), err = rate(cols, "split_err"), rates = {};
	for (const o of OUTCOMES) rates[o] = rate(cols, "faults_" + o);
	for (let i = 0; i < cols.t.length; i++) {
		if (!(cols.split_estimated[i] > 0)) continue;
		for (const o of OUTCOMES)
			if (rates[o][i] !== null && inseparable(rates[o][i], o.startsWith("vma") ? err[i] : errFb[i])) hidden++;
	}
	const d = el("div", "Estimated" + how + " from " + fmtNum(ss.seen) + " faults classified in " + fmtNum(ss.windows) +
		" process windows, applied to the exact fault and fallback counts. 95% intervals over the range: " +
		parts.join("; ") + "." + (ss.kernelMode > 0 ? " Taken in kernel mode (mmap_lock without a VMA-lock attempt, " +
			"not fallbacks): ≈ " + fmtNum(ss.kernelMode) + " faults." : "") + (ss.notSampled > 0 ? " Not sampled (no estimate): " + fmtNum(ss.notSampled) + " faults." : "") +
		(hidden ? " Not drawn: " + fmtNum(hidden) + " estimates whose interval is wider than the value (too few faults " +
			"sampled; the legend gives their bound)." : ""), "note");
	d.id = "split-note";
	return d;
}

const nsToMs = v => v === null ? null : v / 1e6;
const fmtPct0 = v => v === 0 ? "0" : v < 1 ? v.toFixed(2) : v < 10 ? v.toFixed(1) : v.toFixed(0);

/* ---- tables ---- */

/* Tables fit their cards: a column with a priority (prio: lower goes first) is hidden while the
 * table is wider than the box it is in, and the caption names what is hidden; columns without
 * one always stay, and if they alone are too wide, their cut cells (td.cg) are cut shorter. Refitted whenever the table's size changes (a resize, a new sort), in the next
 * frame (a ResizeObserver that changes what it observes in its own callback loops). */
function fitTable(t) {
	const box = t.parentElement;
	if (!t.isConnected) { tableFitter.unobserve(t); return; }
	if (!box) return;
	const cs = getComputedStyle(box);
	const avail = box.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
	for (const e of t.querySelectorAll(".colhide")) e.classList.remove("colhide");
	t.classList.remove("narrow");
	const order = t.fitPrio.map((p, i) => [p, i]).filter(([p]) => p !== undefined)
		.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
	const hidden = [];
	for (const [, i] of order) {
		if (t.getBoundingClientRect().width <= avail + 0.5) break;
		for (const c of t.querySelectorAll("tr:not(.emptyrow) > :nth-child(" + (i + 1) + ")")) c.classList.add("colhide");
		hidden.push(t.fitLabels[i]);
	}
	/* Still too wide with every column that may go gone: long paths and callers cut shorter. */
	if (t.getBoundingClientRect().width > avail + 0.5) t.classList.add("narrow");
	t.fitNote.textContent = hidden.length ? "Hidden at this width (widen the window to see them): " + hidden.join(", ") : "";
	t.fitNote.hidden = !hidden.length;
}
const fitPending = new Set();
const tableFitter = new ResizeObserver(entries => {
	if (!fitPending.size) requestAnimationFrame(() => { for (const t of fitPending) fitTable(t); fitPending.clear(); });
	for (const e of entries) fitPending.add(e.target);
});

/* A sortable table of @rows with @cols [{key, label, num, get(row), fmt(v), prio}]; @onClick(row). */
function table(id, cols, rows, onClick, empty) {
	const def = cols.find(c => c.sortDefault);
	const sort = state.sort[id] || {key: def ? def.key : null, asc: false};
	const t = el("table", null, "sortable");
	t.id = id;
	t.fitPrio = cols.map(c => c.prio);
	t.fitLabels = cols.map(c => c.label);
	t.fitNote = el("caption", null, "note");
	t.fitNote.hidden = true;
	t.append(t.fitNote);
	tableFitter.observe(t);
	const tr = el("tr");
	for (const c of cols) {
		const th = el("th", c.label, c.num ? "n" : "");
		if (c.title) th.title = c.title;
		if (c.key === sort.key) th.classList.add("sorted");
		if (c.key === sort.key && sort.asc) th.classList.add("asc");
		th.addEventListener("click", () => {
			state.sort[id] = {key: c.key, asc: sort.key === c.key ? !sort.asc : !c.num};
			t.replaceWith(table(id, cols, rows, onClick, empty));
		});
		tr.append(th);
	}
	const th = el("thead");
	th.append(tr);
	t.append(th);
	const tb = el("tbody");
	t.append(tb);
	const col = cols.find(c => c.key === sort.key);
	const sorted = !col ? rows : rows.slice().sort((a, b) => {
		const x = col.get(a), y = col.get(b);
		const r = col.num ? (x ?? -1) - (y ?? -1) : String(x).localeCompare(String(y));
		return sort.asc ? r : -r;
	});
	for (const r of sorted) {
		const row = el("tr", null, onClick ? "click" : "");
		for (const c of cols) {
			const v = c.get(r);
			const td = el("td", c.node ? null : c.fmt ? c.fmt(v, r) : v, c.num ? "n" : "");
			if (c.node) td.append(c.node(v, r));
			if (c.cls) td.className += " " + (c.cls(v, r) || "");
			if (c.tip) td.title = c.tip(v, r);
			row.append(td);
		}
		if (onClick) row.addEventListener("click", () => onClick(r));
		tb.append(row);
	}
	if (!rows.length) {
		const td = el("td", empty || "nothing in this range", "empty");
		td.colSpan = cols.length;
		const er = el("tr", null, "emptyrow");
		er.append(td);
		tb.append(er);
	}
	return t;
}

/* Columns for range totals of processes or units: only collected figures. */
function figureCols(t) {
	const cols = [];
	const tot = shown("totals", t, ["minflt", "majflt"]);
	if (tot || shown("mmaplock", t, ["faults"])) {
		cols.push({key: "faults", label: "Faults", num: true, sortDefault: true, get: faultsOf, fmt: fmtNum});
		if (tot) cols.push({key: "majflt", label: "Major", num: true, get: r => r.majflt, fmt: fmtNum, prio: 4});
	}
	if (shown("fallbacks", t, ["fallback_locks"])) {
		cols.push({key: "fallbacks", label: "Fallbacks", num: true, get: r => r.fallback_locks, fmt: fmtNum,
			title: "faults that fell back to mmap_lock"});
		cols.push({key: "share", label: "Fallback share", num: true,
			get: r => faultsOf(r) ? 100 * r.fallback_locks / faultsOf(r) : null, fmt: fmtPct});
		cols.push({key: "waited", label: "Waited", num: true, get: r => r.fallback_lock_waits, fmt: fmtNum,
			title: "fallbacks that found mmap_lock taken", prio: 5});
	}
	if (shown("faults", t, ["faults_vma", "faults_mmap_fallback"])) {
		/* The split in its three states: a count, "≈ count" (its interval in the tooltip and
		 * the Split column) or why it is unknown; never 0 for a process no burst caught. */
		const side = (r, v, cap, fb) => {
			const ss = splitState(r);
			if (ss.kind === "unknown") return {text: ss.why, cls: "unk", tip: ss.why === "not sampled"
				? "no burst of the fault split caught a fault of it; " + HOW_FAULT_WAIT + " classifies every fault" : ""};
			if (ss.kind === "exact") return {text: fmtNum(v), cls: ""};
			/* Not inseparable(): these are the split's two sides, each an exact count (the
			 * faults that did not fall back, the fallbacks) in every estimated window; only
			 * their division into outcomes is estimated, and split_err bounds that. */
			const [lo, hi] = estInterval(v, fb ? ss.errFb : ss.err, cap);
			return {text: "≈ " + fmtNum(v), cls: "est", tip: "estimate, 95% interval " + fmtNum(lo) + "–" + fmtNum(hi) +
				", from " + fmtNum(ss.seen) + " faults classified in bursts"};
		};
		const vmaOf = r => (r.faults_vma || 0) + (r.faults_vma_retry || 0);
		const splitCol = (key, label, get, cap, fb) => ({key, label, num: true, prio: 6,
			get: r => splitState(r).kind === "unknown" ? null : get(r),
			fmt: (v, r) => side(r, v, cap(r), fb).text, cls: (v, r) => side(r, v, cap(r), fb).cls,
			tip: (v, r) => side(r, v, cap(r), fb).tip});
		cols.push(splitCol("vma", "Under VMA lock", vmaOf, r => Math.max(0, splitState(r).outs - (r.faults_mmap_fallback || 0))));
		cols.push(splitCol("mmapf", "Under mmap_lock", r => r.faults_mmap_fallback || 0,
			r => (r.faults_mmap_fallback || 0) + (r.kernel_mode_faults || 0), true));
		cols.push({key: "split", label: "Split", title: "exact; estimated: ±95% bound on each outcome, n faults classified in " +
			"bursts, faults of windows no burst covered; or why it is unknown", get: r => splitState(r).kind, fmt: (v, r) => {
			const ss = splitState(r);
			if (ss.kind === "exact") return "exact";
			if (ss.kind === "unknown") return ss.why;
			return "±" + fmtNum(ss.err) + ", n=" + fmtNum(ss.seen) +
				(ss.notSampled > 0 ? "; " + fmtNum(ss.notSampled) + " not sampled" : "");
		}, cls: v => v === "unknown" ? "unk" : v === "estimated" ? "est" : "", prio: 1});
		if (faultWaitCollected(t))
			cols.push({key: "fwait", label: "Fault wait", num: true, get: r => r.faults_mmap_lock_wait_ns, fmt: fmtNs, prio: 3});
	}
	if (shown("mmaplock", t, ["mmap_lock_waits"])) {
		cols.push({key: "waits", label: "mmap_lock waits", num: true, get: r => r.mmap_lock_waits, fmt: fmtNum, prio: 2});
		cols.push({key: "wait", label: "Wait", num: true, get: r => r.mmap_lock_wait_ns, fmt: fmtNs, prio: 3});
		cols.push({key: "hold", label: "Write hold", num: true, get: r => r.mmap_lock_write_hold_ns, fmt: fmtNs, prio: 2});
	}
	return cols;
}

/* ---- views ---- */

function card(title) {
	const c = el("section", null, "card");
	if (title) c.append(el("h2", title));
	return c;
}

function stat(label, value, cls, title) {
	const s = el("div", null, "card stat");
	s.append(el("div", value, "v" + (cls ? " " + cls : "")), el("div", label, "l"));
	if (title) s.title = title;
	return s;
}

/* The open window's cards (from the status @st): fallbacks are live, the kernel's fault counts
 * arrive at its close. */
function openWindowStats(box, st) {
	if (!st || !st.all) return;
	const open = Math.max(0, st.taken - st.window_start), iv = st.interval_seconds;
	const w = st.all.window;
	const next = Math.max(0, iv - open);
	if (running("totals"))
		box.append(stat("faults in the open window", "pending", "pending",
			"the totals collector reads /proc when the window closes, in " + fmtDuration(next)));
	if (running("fallbacks"))
		box.append(stat("fallbacks so far in the open window (" + fmtDuration(open) + ")", fmtNum(w.fallback_locks)));
}

/* How the fallbacks of row @r split into retries (an attempt under the VMA lock first) and
 * aborts (straight to mmap_lock), in its three states. */
function fallbackHow(r) {
	const ss = splitState(r);
	if (ss.kind === "unknown") return {text: ss.why, cls: "unk"};
	const fb = r.faults_mmap_fallback || 0;
	if (!fb) return {text: "–", cls: "muted"};
	const parts = [["retry", r.faults_mmap_retry || 0], ["abort", r.faults_mmap_abort || 0],
		["retry or abort", r.faults_mmap_unknown || 0]].filter(([, x]) => x > 0);
	if (ss.kind === "exact") return {text: parts.map(([n, x]) => n + " " + fmtPct(100 * x / fb)).join(" · "), cls: ""};
	const pts = 100 * Math.min(ss.errFb, fb) / fb, ptsText = "±" + fmtPct(pts).replace(" %", " pts");
	const tip = "estimated from " + fmtNum(ss.seen) + " faults classified in bursts; ± is the 95% bound on each share";
	/* Only the shares whose interval is narrower than themselves (±100 points says nothing). */
	const known = parts.filter(([, x]) => !inseparable(100 * x / fb, pts));
	if (ss.seen < 30 || !known.length) /* a handful of fallbacks: the shares say nothing yet */
		return {text: "too few sampled to tell (" + fmtNum(r.split_fallbacks_seen || 0) + " fallbacks classified)", cls: "unk",
			tip: tip + " (" + ptsText + ": " + parts.map(([n, x]) => n + " " + fmtPct(100 * x / fb)).join(", ") + ")"};
	return {text: "≈ " + known.map(([n, x]) => n + " " + fmtPct(100 * x / fb)).join(" · ") + " " + ptsText +
		(known.length < parts.length ? " (others too few to tell)" : ""), cls: "est", tip};
}

/* The answer first: which processes and units fall back to mmap_lock most over the range, how
 * often, what share of their faults, how many of those waited, what the wait cost where it is
 * collected, and how they fell back where that is known. */
function leadCard(procs, units, secs, t) {
	const iv = state.status ? state.status.interval_seconds : 1;
	/* Rates are per second of the range (the windows stored in it), for processes and units
	 * alike, so the order of the table is that of the fallbacks. */
	const c = el("section", null, "card lead");
	c.id = "lead";
	const r = rangeA();
	const rangeWords = autoSinceStart() ? "since mmlockd started (" + fmtDuration(r.until - r.since) + ")"
		: "over " + fmtDuration(r.until - r.since);
	if (!running("fallbacks") && !procs.some(p => p.fallback_locks > 0)) {
		c.append(el("h2", "Fallbacks to mmap_lock " + rangeWords), optIn("fallbacks"));
		return c;
	}
	const alive = () => Math.max(1, secs || iv);
	const fb = procs.filter(p => p.fallback_locks > 0).sort((a, b) => b.fallback_locks - a.fallback_locks);
	const ufb = units.filter(u => u.fallback_locks > 0).sort((a, b) => b.fallback_locks - a.fallback_locks);
	c.append(el("h2", "Who falls back to mmap_lock most, " + rangeWords));
	const answer = el("p", null, "answer");
	answer.id = "lead-answer";
	if (!fb.length) answer.textContent = "No process fell back to mmap_lock in this range.";
	else {
		const p = fb[0], f = faultsOf(p);
		answer.append(el("b", p.comm), document.createTextNode(" (pid " + p.pid + ") falls back most: " +
			fmtNum(p.fallback_locks / alive(p)) + " fallbacks/s, " + (f ? fmtPct(100 * p.fallback_locks / f) : "–") +
			" of its faults took mmap_lock" + (p.fallback_locks ? ", " + fmtPct(100 * p.fallback_lock_waits / p.fallback_locks) +
			" of those waited for it." : ".")));
	}
	c.append(answer);
	const wait = faultWaitCollected(t);
	const howKnown = running("faults") || procs.some(p => splitState(p).kind !== "unknown");
	const pcols = [
		{key: "comm", label: "Process", get: p => p.comm + " (" + p.pid + ")"},
		{key: "rate", label: "Fallbacks/s", num: true, sortDefault: true, get: p => p.fallback_locks / alive(p), fmt: fmtNum,
			title: "its fallbacks to mmap_lock per second of the range"},
		{key: "share", label: "Share of faults", num: true, get: p => faultsOf(p) ? 100 * p.fallback_locks / faultsOf(p) : null, fmt: fmtPct},
		{key: "waited", label: "Waited", num: true, get: p => 100 * p.fallback_lock_waits / p.fallback_locks, fmt: fmtPct,
			title: "share of its fallbacks that found mmap_lock taken"},
	];
	if (wait) pcols.push({key: "wait", label: "Wait", num: true, get: p => p.faults_mmap_lock_wait_ns / alive(p), fmt: v => fmtNs(v) + "/s"});
	if (howKnown) pcols.push({key: "how", label: "How they fell back", get: p => fallbackHow(p).text,
		cls: (v, p) => "how " + fallbackHow(p).cls, tip: (v, p) => fallbackHow(p).tip || ""});
	state.sort["lead-procs"] = state.sort["lead-procs"] || {key: "rate", asc: false};
	const wrap = el("div", null, "lead-grid");
	const pbox = el("div");
	pbox.append(table("lead-procs", pcols, fb.slice(0, LEAD_ROWS), p => go("process/" + p.pid + "/" + p.start_time.toFixed(3)),
		"no process fell back to mmap_lock in this range"));
	const more = el("div", null, "note");
	if (fb.length > LEAD_ROWS) {
		const a = el("a", "all processes that fell back");
		a.href = "#processes";
		more.append(a, document.createTextNode(" · "));
	}
	more.append(document.createTextNode(wait ? "" : "Wait time of fallbacks: not collected while the fault split runs in bursts (" +
		HOW_FAULT_WAIT + " collects it). "));
	if (!howKnown) more.append(document.createTextNode("How they fell back: not collected (" + collectorsWith("faults") + ")."));
	pbox.append(more);
	const ubox = el("div");
	ubox.append(table("lead-units", [
		{key: "cg", label: "Unit", get: u => u.cgroup || "(unknown)", cls: () => "cg", tip: v => v},
		{key: "rate", label: "Fallbacks/s", num: true, sortDefault: true, get: u => u.fallback_locks / Math.max(1, secs || 1), fmt: fmtNum},
		{key: "share", label: "Share", num: true, get: u => faultsOf(u) ? 100 * u.fallback_locks / faultsOf(u) : null, fmt: fmtPct},
	], ufb.slice(0, LEAD_UNITS), u => go("unit/" + encodeURIComponent(u.cgroup)), "no unit fell back"));
	wrap.append(pbox, ubox);
	c.append(wrap);
	return c;
}

async function viewOverview(v, id) {
	const r = rangeA();
	const q = {since: r.since.toFixed(3), until: r.until.toFixed(3)};
	/* The rows drawn (one more process, to know whether to link to the rest). */
	const [ser, top, units] = await Promise.all([
		api("series", {...q, points: SERIES_POINTS}),
		api("top", {...q, limit: LEAD_ROWS + 1, order: "fallbacks"}),
		api("top", {...q, limit: LEAD_UNITS, by: "cgroup", order: "fallbacks"}),
	]);
	if (id !== state.renderId) return;
	const cols = columns(ser), t = totals(cols);
	const stats = el("div", null, "stats");
	const secs = spanSeconds(cols);
	const f = faultsOf(t);
	if (shown("fallbacks", t, ["fallback_locks"])) {
		stats.append(stat("fallbacks/s, all processes", secs ? fmtNum(t.fallback_locks / secs) : "–", "",
			fmtNum(t.fallback_locks) + " fallbacks in " + fmtDuration(secs)));
		stats.append(stat("fallback share", f ? fmtPct(100 * t.fallback_locks / f) : "–", "",
			fmtNum(t.fallback_locks) + " faults took mmap_lock"));
		stats.append(stat("fallbacks that waited", t.fallback_locks ? fmtPct(100 * t.fallback_lock_waits / t.fallback_locks) : "–", "",
			fmtNum(t.fallback_lock_waits) + " found mmap_lock taken"));
	}
	if (shown("totals", t, ["minflt", "majflt"]) || shown("mmaplock", t, ["faults"]))
		stats.append(stat("faults/s over the range", secs ? fmtNum(f / secs) : "–", "", fmtNum(f) + " faults in " + fmtDuration(secs)));
	stats.append(stat("lost events", fmtNum(t.lost || 0), t.lost ? "lost" : "", "samples the kernel dropped (ring overflow) in the range"));
	stats.append(stat("windows stored in the range", fmtNum(t.windows || 0)));
	openWindowStats(stats, state.status);
	const grid = el("div", null, "grid");
	const lostBox = el("section", null, "card");
	v.replaceChildren(leadCard(top.rows, units.rows, secs, t), stats, grid);
	seriesCharts("ov-", cols, grid, r);
	grid.append(lostBox);
	drawChart("ov-lost", lostBox, r, "Lost events", "events", cols.t, [{label: "lost", values: cols.lost, color: "--c4"}]);
}

function procCols(rows) {
	const t = {};
	for (const r of rows) for (const k of Object.keys(r)) if (typeof r[k] === "number") t[k] = (t[k] || 0) + r[k];
	return t;
}

function procTable(id, rows) {
	const t = procCols(rows);
	/* The figures first, the cgroup (long) after them, so the costs fit the screen. */
	const cols = [
		{key: "pid", label: "PID", num: true, get: r => r.pid},
		{key: "comm", label: "Command", get: r => r.comm},
	].concat(figureCols(t), [
		{key: "cgroup", label: "cgroup", get: r => r.cgroup || "(unknown)", cls: () => "muted cg", tip: v => v, prio: 5},
		{key: "last", label: "Last seen", num: true, get: r => r.last, fmt: fmtTime, prio: 6},
	]);
	return table(id, cols, rows, r => go("process/" + r.pid + "/" + r.start_time.toFixed(3)), "no process did anything in this range");
}

async function viewProcesses(v, id) {
	const r = rangeA();
	const top = await api("top", {since: r.since.toFixed(3), until: r.until.toFixed(3), limit: PROC_LIMIT});
	if (id !== state.renderId) return;
	const c = card();
	const bar = el("div", null, "toolbar");
	bar.append(el("h2", "Processes in the range"));
	const f = el("input");
	f.type = "search";
	f.placeholder = "filter by pid, command or cgroup";
	f.value = state.filter;
	bar.append(f, el("span", (top.rows.length === PROC_LIMIT ? "the " + PROC_LIMIT + " with most faults; " : "") +
		"click a process for its charts", "muted"));
	const holder = el("div");
	const render = () => {
		const q = state.filter.toLowerCase();
		holder.replaceChildren(procTable("procs", top.rows.filter(p => !q || String(p.pid).includes(q) ||
			String(p.comm).toLowerCase().includes(q) || String(p.cgroup).toLowerCase().includes(q))));
	};
	f.addEventListener("input", () => { state.filter = f.value; render(); });
	render();
	c.append(bar, holder);
	v.replaceChildren(c);
}

async function viewProcess(v, id) {
	const [pid, start] = state.arg;
	const r = rangeA();
	const flt = {pid, start_time: start};
	const [ser, top, lk, now] = await Promise.all([
		api("series", {since: r.since.toFixed(3), until: r.until.toFixed(3), points: SERIES_POINTS, ...flt}, BEHIND_FIELDS),
		api("top", {since: "0", until: r.until.toFixed(3), limit: 1, ...flt}),
		getJSON("api/v1/locks?" + qs({pid, since: r.since.toFixed(3), until: r.until.toFixed(3), top: BEHIND_ROWS})),
		getJSON("api/v1/processes?" + qs(flt)),
	]);
	if (id !== state.renderId) return;
	const info = top.rows[0];
	const live = now.processes.find(p => p.pid === Number(pid) && Math.abs(p.start_time - Number(start)) < 0.001);
	const head = card();
	const h = el("h2");
	h.append(el("span", info ? info.comm : live ? live.comm : "process " + pid, "comm"), el("span", " · pid " + pid, "muted"));
	head.append(h);
	const meta = el("div", null, "muted");
	meta.textContent = "started " + fmtTime(Number(start)) + (info ? " · cgroup " + (info.cgroup || "(unknown)") + " · seen " + fmtTime(info.first) +
		" – " + fmtTime(info.last) : "") + (live ? live.exited ? " · exited" : " · running" : " · not running");
	head.append(meta);
	if (info && info.cgroup) {
		const a = el("button", "open its unit " + info.cgroup, "link");
		a.addEventListener("click", () => go("unit/" + encodeURIComponent(info.cgroup)));
		head.append(a);
	}
	/* Once it has exited, its series ends with its last window: the windows after it would
	 * draw (and their legends read) zeros for a process that no longer exists. */
	const exited = !!info && (!live || live.exited);
	if (exited) {
		const s0 = ser.series.columns.indexOf("ts_start");
		ser.series.rows = ser.series.rows.filter(row => row[s0] < info.last - 0.001);
	}
	const cols = columns(ser), t = totals(cols);
	const stats = el("div", null, "stats");
	const f = faultsOf(t);
	stats.append(stat("faults in the range", fmtNum(f)));
	if (shown("fallbacks", t, ["fallback_locks"])) {
		/* fallback_locks counts the faults taken in kernel mode too (x86 sends them to mmap_lock
		 * without a VMA-lock attempt): said beside it where there were any. */
		const k = t.kernel_mode_faults || 0;
		stats.append(stat(k ? "fallbacks to mmap_lock, " + fmtNum(k) + " of them faults taken in kernel mode" :
			"fallbacks to mmap_lock", fmtNum(t.fallback_locks), null, k ? "faults taken in kernel mode (copy_to_user in a " +
			"system call) take mmap_lock without trying the VMA lock: counted here, but no user fault fell back" : undefined));
		stats.append(stat("fallback share", f ? fmtPct(100 * t.fallback_locks / f) : "–"));
	}
	if (live && !live.exited) {
		if (running("totals")) stats.append(stat("faults in the open window", "pending", "pending", "arrive when the window closes"));
		if (running("fallbacks")) stats.append(stat("fallbacks so far in the open window", fmtNum(live.window.fallback_locks)));
	}
	/* Fault latency (--fault-latency on): the BPF source's histograms, live since mmlockd
	 * started (not stored), a sample of 1 in 32 completed faults; by outcome when the faults
	 * collector runs there. A quantile is known only to its log2 bucket, so it shows as the
	 * bucket [upper/2, upper). The last values seen stay (marked so) once the process exits. */
	const key = pid + "/" + start;
	if (live && live.total) state.latency[key] = {at: now.taken, total: live.total};
	const seen = state.latency[key];
	const lt = seen ? seen.total : null;
	const gone = seen && (!live || live.exited);
	const latTitle = "the log2 bucket the quantile falls in; a sample of 1 in 32 completed faults (--fault-latency on)" +
		(gone ? "; as last seen at " + fmtTime(seen.at) + ", before it exited" : "");
	const bucket = ns => ns ? fmtNs(ns / 2) + "–" + fmtNs(ns) : "–";
	const latStat = (what, p50, p99) => stats.append(stat("fault latency, " + what + ", p50 / p99 " +
		(gone ? "until it exited" : "since start"), bucket(p50) + " / " + bucket(p99), "", latTitle));
	const byOutcome = lt ? OUTCOMES.filter((o) => lt["fault_ns_outcome_" + o + "_p50"]) : [];
	if (byOutcome.length) {
		for (const o of byOutcome) latStat(OUTCOME_NAMES[o], lt["fault_ns_outcome_" + o + "_p50"], lt["fault_ns_outcome_" + o + "_p99"]);
	} else if (lt && (lt.fault_ns_vma_p50 || lt.fault_ns_mmap_p50)) {
		latStat("under the VMA lock", lt.fault_ns_vma_p50, lt.fault_ns_vma_p99);
		if (lt.fault_ns_mmap_p50) latStat("under mmap_lock", lt.fault_ns_mmap_p50, lt.fault_ns_mmap_p99);
	} else if (!live && state.status && state.status.fault_latency && state.status.fault_latency.mode !== "off") {
		stats.append(stat("fault latency", "not kept", "muted", "fault latency is live only (not stored); this page did not see the process while it ran"));
	}
	const grid = el("div", null, "grid");
	v.replaceChildren(head, stats, grid);
	head.style.marginBottom = "1rem";
	/* Its lifetime within the range: no zeros drawn for before it started or after it exited. */
	const iv = state.status ? state.status.interval_seconds : 0;
	const pr = {since: Math.max(r.since, Number(start) - iv), until: r.until};
	if (info && (!live || live.exited)) pr.until = Math.min(r.until, info.last + iv);
	if (pr.until <= pr.since) pr.until = r.until;
	seriesCharts("p-", cols, grid, pr, exited ? {lastLabel: "exited; its last window"} : null);
	behindCard(v, "p-", Number(pid), Number(start), lk.rows, cols, pr);
}

/* The lock rows of one pid the process view reads: those of its longest total waits. */
const BEHIND_ROWS = 2000;

/* Appends to @into whom process @pid (started @start) waited behind for mmap_lock over the range
 * (the contention collector names the holder of every such wait): its lock rows @rows (of
 * /api/v1/locks?pid=) summed per holder, mode and operation, longest total wait first, and its
 * series @cols' wait by the holder's operation over time (@xr), stacked, the ops that waited in
 * the range only. The card is in the document before its chart is drawn, so the chart takes
 * the card's width from the start. */
function behindCard(into, prefix, pid, start, rows, cols, xr) {
	const c = el("section", null, "card behind");
	c.id = prefix + "behind";
	into.append(c);
	c.append(el("h2", "Waited behind: who held mmap_lock while it waited"));
	const t = totals(cols);
	const mine = rows.filter(l => l.lock === "mmap_lock" && l.pid === pid && Math.abs(l.start_time - start) < 0.002);
	if (!shown("contention", t, ["mmap_lock_behind_waits"]) && !mine.length) {
		c.append(optIn("contention", "Whom this process waited behind for mmap_lock, and what the holder was doing"));
		return c;
	}
	const ops = Object.keys(HOLDER_OPS).filter(o => (t[behindKey(o)] || 0) > 0).sort((a, b) => t[behindKey(b)] - t[behindKey(a)]);
	const waitNs = sum(ops.map(o => t[behindKey(o)]));
	const summary = el("p", null, "note");
	summary.id = prefix + "behind-summary";
	if (!(t.mmap_lock_behind_waits > 0) && !mine.length)
		summary.textContent = "It waited for no mmap_lock in this range.";
	else {
		const unknown = t[behindKey("unknown")] || 0;
		summary.textContent = fmtNum(t.mmap_lock_behind_waits || 0) + " waits for mmap_lock, " + fmtNs(waitNs) + " in all" +
			(waitNs ? "; the holder was named for " + fmtPct(100 * (waitNs - unknown) / waitNs) + " of that time" +
				(unknown ? " (unknown: it let go as the wait began, exited, or was not seen)." : ".") : ".");
	}
	c.append(summary);

	/* One row per holder process, mode, operation and whose mm the lock is: the threads of a
	 * holder and the waiters' call sites are summed. */
	const by = new Map();
	for (const l of mine) {
		const other = l.lock_pid !== null && l.lock_pid !== pid;
		const k = [l.holder_mode, l.holder_pid, l.holder_comm, l.holder_op, other ? l.lock_pid : ""].join("\u0000");
		const e = by.get(k) || {mode: l.holder_mode, pid: l.holder_pid, comm: l.holder_comm, op: l.holder_op,
			lockPid: other ? l.lock_pid : null, waits: 0, total: 0, max: 0, tids: new Set()};
		e.waits += l.contended;
		e.total += l.total_wait_ns;
		e.max = Math.max(e.max, l.max_wait_ns);
		if (l.holder_tid !== null) e.tids.add(l.holder_tid);
		by.set(k, e);
	}
	const holder = e => e.pid === null ? "–" : (e.comm || "?") + " (" + e.pid + ")" + (e.pid === pid ? " · itself" : "");
	state.sort[prefix + "behind-holders"] = state.sort[prefix + "behind-holders"] || {key: "total", asc: false};
	const wrap = el("div", null, "tablewrap");
	wrap.append(table(prefix + "behind-holders", [
		{key: "waits", label: "waits", num: true, get: e => e.waits, fmt: fmtNum},
		{key: "total", label: "total wait", num: true, sortDefault: true, get: e => e.total, fmt: fmtNs},
		{key: "max", label: "max wait", num: true, get: e => e.max, fmt: fmtNs, prio: 3},
		{key: "avg", label: "avg wait", num: true, get: e => e.waits ? e.total / e.waits : null, fmt: fmtNs, prio: 2},
		{key: "holder", label: "holder", get: holder,
			tip: (v, e) => e.tids.size ? "thread" + (e.tids.size > 1 ? "s " : " ") + [...e.tids].sort((a, b) => a - b).join(", ") : ""},
		{key: "mode", label: "mode", get: e => e.mode, cls: v => v === "unknown" ? "unk" : "", prio: 4,
			tip: v => v === "read" ? "one of the readers, named as a hint: others may have held it too"
				: v === "unknown" ? "no holder could be named" : "held for write"},
		{key: "op", label: "op", get: e => e.op + (e.lockPid !== null ? " (another process's mm)" : ""),
			cls: (v, e) => e.op === "unknown" ? "unk" : "",
			tip: (v, e) => (HOLDER_OPS[e.op] || e.op) + (e.lockPid !== null ? "; the lock is pid " + e.lockPid +
				"'s mmap_lock: this process was reading that process's memory" : "")},
	], [...by.values()], null, "no mmap_lock wait of it in this range"));
	c.append(wrap);
	if (rows.length >= BEHIND_ROWS)
		c.append(el("div", "From the " + fmtNum(BEHIND_ROWS) + " lock rows of pid " + pid + " with the longest total wait.", "note"));

	/* Its wait over time by the holder's operation: the five largest, the rest summed, and
	 * the wait no holder was named for, grey, last (on top). */
	const box = el("div");
	c.append(box);
	const named = ops.filter(o => o !== "unknown");
	const top = named.slice(0, named.length > 5 ? 4 : 5), rest = named.slice(top.length);
	const perS = o => rate(cols, behindKey(o)).map(nsToMs);
	const palette = ["--c1", "--c2", "--c3", "--c5", "--c4"];
	const lines = top.map((o, i) => ({label: o, values: perS(o), color: palette[i]}));
	if (rest.length) {
		const each = rest.map(perS);
		lines.push({label: rest.length + " more ops (" + rest.join(", ") + ")", color: palette[4],
			values: cols.t.map((x, i) => cols.seconds[i] === null ? null : sum(each.map(a => a[i])))});
	}
	if (ops.includes("unknown")) lines.push({label: "unknown (no holder named)", values: perS("unknown"), color: "--c6"});
	const title = "mmap_lock wait by what the holder was doing";
	if (lines.length) drawChart(prefix + "behind-ops", box, xr, title, "ms/s", cols.t, lines, null, {stacked: true});
	else {
		box.classList.add("chart");
		box.append(el("h3", title), el("div", "no mmap_lock wait in this range", "nodata"));
	}
	return c;
}

async function viewUnits(v, id) {
	const r = rangeA();
	const top = await api("top", {since: r.since.toFixed(3), until: r.until.toFixed(3), limit: 1000, by: "cgroup"});
	if (id !== state.renderId) return;
	const t = procCols(top.rows);
	const cols = [
		{key: "cgroup", label: "cgroup / systemd unit", get: r => r.cgroup || "(unknown)", cls: () => "cg", tip: v => v},
		{key: "processes", label: "Processes", num: true, get: r => r.processes, fmt: fmtNum, prio: 5},
	].concat(figureCols(t));
	const c = card("Units (cgroups) in the range");
	c.append(table("units", cols, top.rows, r => go("unit/" + encodeURIComponent(r.cgroup)), "no unit did anything in this range"));
	v.replaceChildren(c);
}

async function viewUnit(v, id) {
	const cg = state.arg[0];
	const r = rangeA();
	const rq = {since: r.since.toFixed(3), until: r.until.toFixed(3), cgroup: cg};
	const [ser, top] = await Promise.all([
		api("series", {...rq, points: SERIES_POINTS}),
		api("top", {...rq, limit: 200}),
	]);
	if (id !== state.renderId) return;
	const head = card();
	head.append(el("h2", "unit " + (cg || "(unknown cgroup)")));
	head.style.marginBottom = "1rem";
	const grid = el("div", null, "grid");
	v.replaceChildren(head, grid);
	seriesCharts("u-", columns(ser), grid, r);
	const tc = card("Its processes");
	tc.append(procTable("unit-procs", top.rows));
	v.append(tc);
}

async function viewLocks(v, id) {
	const r = rangeA();
	const lk = await getJSON("api/v1/locks?" + qs({since: r.since.toFixed(3), until: r.until.toFixed(3), top: 50}));
	if (id !== state.renderId) return;
	const c = card("Lock contention by kernel caller, the 50 longest total waits (mmlockd report --locks)");
	if (!lk.rows.length && !running("contention")) {
		c.append(optIn("contention"));
		v.replaceChildren(c);
		return;
	}
	const cols = [
		{key: "contended", label: "contended", num: true, sortDefault: true, get: r => r.contended, fmt: fmtNum},
		{key: "total", label: "total wait", num: true, get: r => r.total_wait_ns, fmt: fmtNs},
		{key: "max", label: "max wait", num: true, get: r => r.max_wait_ns, fmt: fmtNs, prio: 4},
		{key: "avg", label: "avg wait", num: true, get: r => r.avg_wait_ns, fmt: fmtNs, prio: 2},
		{key: "p99", label: "p99", num: true, get: r => r.p99_wait_ns, fmt: fmtNs, prio: 3},
		{key: "type", label: "type", get: r => r.type, prio: 1},
		{key: "caller", label: "caller", get: r => r.caller, cls: () => "cg", tip: v => v},
		{key: "lock", label: "lock", get: r => r.lock + (r.lock_pid !== null && r.lock_pid !== r.pid ? " of pid " + r.lock_pid : ""),
			prio: 5, cls: () => "muted", tip: (v, r) => r.lock_pid !== null && r.lock_pid !== r.pid ? "another process's mm: this one was reading its memory" : ""},
		{key: "comm", label: "process", get: r => r.comm + " (" + r.pid + ")"},
	];
	/* Who held an mmap_lock when its waits began (rows are per holder; other locks have none):
	 * the holder, and under it its mode and operation, in one column so the table still fits
	 * 1400 px. */
	const heldFor = r => r.holder_mode === "unknown" ? "unknown: no holder named" : r.holder_mode + ": " + r.holder_op;
	if (lk.rows.some(r => r.holder_mode)) {
		cols.push({key: "holder", label: "mmap_lock holder", get: r => !r.holder_mode ? "" : r.holder_pid === null ? "–"
			: (r.holder_comm || "?") + " (" + r.holder_pid + ")",
			node: (v, r) => {
				const d = el("div", v);
				if (r.holder_mode) d.append(el("div", heldFor(r), "muted held" + (r.holder_mode === "unknown" ? " unk" : "")));
				return d;
			},
			tip: (v, r) => !r.holder_mode ? "" : (r.holder_tid !== null ? "thread " + r.holder_tid + "; " : "") +
				(r.holder_mode === "read" ? "read (one of the readers, named as a hint)" : r.holder_mode) + ": " +
				(HOLDER_OPS[r.holder_op] || r.holder_op)});
	}
	state.sort.locks = state.sort.locks || {key: "total", asc: false};
	c.append(table("locks", cols, lk.rows, null, "no lock was contended in this range"));
	v.replaceChildren(c);
}

/* Compare: the range chosen above (A) against B (the period just before, or custom), in the
 * seeds' table layout: one row per figure, A, B and the change of B relative to A (A is the
 * baseline, as in `report --compare A B` and `perf diff`), rates per second that each range's
 * windows cover; A's and B's charts share their y scale. */
async function viewCompare(v, id) {
	const a = rangeA(), b = rangeB(a);
	const q = (r, extra) => ({since: r.since.toFixed(3), until: r.until.toFixed(3), ...extra});
	const [sa, sb, ta, tb] = await Promise.all([
		api("series", q(a, {points: SERIES_POINTS})), api("series", q(b, {points: SERIES_POINTS})),
		/* Per command needs names and three counters only: every process of the range (up to
		 * 1000), so no other counter. */
		getJSON("api/v1/top?" + qs(q(a, {limit: 1000, ended: 1, fields: PER_COMMAND_FIELDS}))),
		getJSON("api/v1/top?" + qs(q(b, {limit: 1000, ended: 1, fields: PER_COMMAND_FIELDS}))),
	]);
	if (id !== state.renderId) return;
	const ca = columns(sa), cb = columns(sb), A = totals(ca), B = totals(cb);
	A.seconds = spanSeconds(ca);
	B.seconds = spanSeconds(cb);
	const ctl = compareControls(a, b, A, B), tcard = compareFigures(A, B);
	const grid = el("div", null, "grid two");
	const ga = el("div"), gb = el("div");
	ga.append(el("h2", "A"));
	gb.append(el("h2", "B"));
	grid.append(ga, gb);
	v.replaceChildren(ctl, tcard, grid);
	ctl.style.marginBottom = tcard.style.marginBottom = "1rem";
	compareCharts([[ga, ca, "ca-", a], [gb, cb, "cb-", b]]);
	v.append(perCommandCard(ta.rows, tb.rows));
}

/* Compare's first card: B's choice (the period before A, or custom) and what A and B hold. */
function compareControls(a, b, A, B) {
	const ctl = card("Compare two ranges");
	const line = el("div", null, "ranges");
	const sel = el("select");
	for (const [val, txt] of [["previous", "B: the period just before A"], ["custom", "B: custom"]]) {
		const o = el("option", txt);
		o.value = val;
		sel.append(o);
	}
	sel.value = state.compareB;
	const from = el("input"), to = el("input");
	from.type = to.type = "text";
	from.size = to.size = 19;
	from.placeholder = to.placeholder = "YYYY-MM-DD HH:MM:SS";
	from.value = toLocalInput(b.since);
	to.value = toLocalInput(b.until);
	from.id = "compare-from";
	to.id = "compare-to";
	const apply = el("button", "apply B");
	apply.id = "compare-apply";
	apply.addEventListener("click", () => {
		const s = fromLocalInput(from.value), u = fromLocalInput(to.value);
		if (s === null || u === null || u <= s) { banner("B: 'from' must be before 'to'", true); return; }
		state.compareB = "custom";
		state.compareCustom = {since: s, until: u};
		render();
	});
	sel.addEventListener("change", () => { state.compareB = sel.value; if (sel.value === "previous") render(); });
	line.append(sel, from, to, apply);
	ctl.append(line);
	const ra = el("div", "A: " + rangeText(a) + " · " + fmtNum(A.windows || 0) + " windows", "muted");
	const rb = el("div", "B: " + rangeText(b) + " · " + fmtNum(B.windows || 0) + " windows", "muted");
	ra.id = "compare-a-text";
	rb.id = "compare-b-text";
	ctl.append(ra, rb);

	return ctl;
}

/* Compare's figures, one row each: A, B and B's change relative to A (green where better). */
function compareFigures(A, B) {
	const both = {};
	for (const k of new Set(Object.keys(A).concat(Object.keys(B)))) both[k] = (A[k] || 0) + (B[k] || 0);
	const rows = [];
	const per = (T, k) => T.seconds ? (T[k] || 0) / T.seconds : null;
	const pct = (x, y) => y ? 100 * x / y : null;
	if (shown("totals", both, ["minflt", "majflt"]) || shown("mmaplock", both, ["faults"])) {
		rows.push(["Page faults", T => T.seconds ? faultsOf(T) / T.seconds : null, v => fmtNum(v) + " /s", 0]);
		rows.push(["Major faults", T => per(T, "majflt"), v => fmtNum(v) + " /s", -1]);
	}
	if (shown("fallbacks", both, ["fallback_locks"])) {
		rows.push(["Fallbacks to mmap_lock", T => per(T, "fallback_locks"), v => fmtNum(v) + " /s", -1]);
		rows.push(["Fallback share", T => pct(T.fallback_locks || 0, faultsOf(T)), fmtPct, -1]);
		rows.push(["Fallbacks that waited", T => pct(T.fallback_lock_waits || 0, T.fallback_locks || 0), fmtPct, -1]);
	}
	if (shown("faults", both, ["faults_vma", "faults_mmap_fallback"])) {
		/* Estimated on a side that ran the split in bursts (≈), unknown where nothing was
		 * classified: the share of the faults the split covered, not of all. */
		const vmaShare = T => {
			const ss = splitState(T);
			return ss.kind === "unknown" || !ss.outs ? null : pct((T.faults_vma || 0) + (T.faults_vma_retry || 0), ss.outs);
		};
		const est = splitState(A).kind === "estimated" || splitState(B).kind === "estimated";
		rows.push([est ? "Faults under the VMA lock (≈ estimated)" : "Faults under the VMA lock", vmaShare,
			v => (est ? "≈ " : "") + fmtPct(v), 1]);
		if (faultWaitCollected(both))
			rows.push(["mmap_lock wait of faults", T => per(T, "faults_mmap_lock_wait_ns"), v => fmtNs(v) + "/s", -1]);
	}
	if (shown("mmaplock", both, ["mmap_lock_waits"]))
		rows.push(["mmap_lock wait, all", T => per(T, "mmap_lock_wait_ns"), v => fmtNs(v) + "/s", -1]);
	rows.push(["Lost events", T => T.lost || 0, fmtNum, -1]);

	const ct = el("table");
	ct.id = "compare-table";
	const hr = el("tr");
	for (const [h, n] of [["Figure", false], ["A", true], ["B", true], ["Change (B vs A)", true]]) hr.append(el("th", h, n ? "n" : ""));
	const cth = el("thead");
	cth.append(hr);
	ct.append(cth);
	const body = el("tbody");
	for (const [name, fn, fmt, better] of rows) {
		const x = fn(A), y = fn(B);
		const tr = el("tr");
		let ch = "–", cls = "";
		if (x !== null && y !== null && x !== 0) {
			const d = 100 * (y - x) / x;
			ch = (d > 0 ? "+" : "") + d.toFixed(1) + " %";
			if (better && Math.abs(d) >= 1) cls = (d * better > 0) ? "better" : "worse";
		}
		tr.append(el("td", name), el("td", x === null ? "unknown" : fmt(x), "n"), el("td", y === null ? "unknown" : fmt(y), "n"), el("td", ch, "n " + cls));
		body.append(tr);
	}
	ct.append(body);
	const tcard = card("Figures (A is the baseline: the change is B's relative to A)");
	tcard.append(ct);

	return tcard;
}

/* Compare's charts: for each of @sides [box, cols, id prefix, range], its faults/s and fallback
 * share, A's and B's on one y scale per figure. */
function compareCharts(sides) {
	const [[, ca], [, cb]] = sides;
	/* A's and B's lines, then drawn on one y scale per figure. */
	const faultLine = cols => [{label: "faults", values: cols.minflt.map((m, i) => m === null ? null
		: cols.seconds[i] ? (m + cols.majflt[i]) / cols.seconds[i] : 0)}];
	const shareLine = cols => [{label: "fallback share", color: "--c2", values: cols.fallback_locks.map((v, i) => {
		if (v === null) return null;
		const f = cols.minflt[i] + cols.majflt[i] || cols.faults[i];
		return f ? 100 * v / f : 0;
	})}];
	const fmax = Math.max(maxOf(faultLine(ca)), maxOf(faultLine(cb)));
	const smax = Math.max(maxOf(shareLine(ca)), maxOf(shareLine(cb)));
	for (const [box, cols, p, xr] of sides) {
		const fbox = el("section", null, "card"), sbox = el("section", null, "card");
		box.append(fbox, sbox);
		const t = totals(cols);
		if (shown("totals", t, ["minflt", "majflt"]) || cols.n === 0)
			drawChart(p + "faults", fbox, xr, "Page faults", "faults/s", cols.t, faultLine(cols), null, {yMax: fmax});
		else fbox.append(el("h3", "Page faults"), optIn("totals"));
		if (shown("fallbacks", t, ["fallback_locks"]) || cols.n === 0)
			drawChart(p + "share", sbox, xr, "Fallback share", "%", cols.t, shareLine(cols), fmtPct0, {yMax: smax});
		else sbox.append(el("h3", "Fallback share"), optIn("fallbacks"));
	}

}

/* Compare's per-command card over the process rows @ra (A) and @rb (B). */
function perCommandCard(ra, rb) {
	/* Per command: pids differ between runs, names do not. */
	const byComm = (rows) => {
		const m = new Map();
		for (const r of rows) {
			const e = m.get(r.comm) || {comm: r.comm, processes: 0, faults: 0, fallbacks: 0};
			e.processes++;
			e.faults += faultsOf(r);
			e.fallbacks += r.fallback_locks;
			m.set(r.comm, e);
		}
		return m;
	};
	const ma = byComm(ra), mb = byComm(rb);
	const names = [...new Set([...ma.keys(), ...mb.keys()])];
	const zero = {processes: 0, faults: 0, fallbacks: 0};
	const crow = names.map(n => ({comm: n, a: ma.get(n) || zero, b: mb.get(n) || zero}))
		.sort((x, y) => y.a.faults + y.b.faults - x.a.faults - x.b.faults).slice(0, 50);
	const shareOf = e => e.faults ? 100 * e.fallbacks / e.faults : null;
	const pcols = [
		{key: "comm", label: "Command", get: r => r.comm},
		{key: "fa", label: "Faults A", num: true, sortDefault: true, get: r => r.a.faults, fmt: fmtNum},
		{key: "fb", label: "Faults B", num: true, get: r => r.b.faults, fmt: fmtNum},
		{key: "sa", label: "Fallback share A", num: true, get: r => shareOf(r.a), fmt: fmtPct, prio: 4},
		{key: "sb", label: "Fallback share B", num: true, get: r => shareOf(r.b), fmt: fmtPct, prio: 4},
		{key: "pa", label: "Processes A", num: true, get: r => r.a.processes, fmt: fmtNum, prio: 2},
		{key: "pb", label: "Processes B", num: true, get: r => r.b.processes, fmt: fmtNum, prio: 2},
	];
	const pc = card("Per command (the 50 with most faults in A and B)");
	pc.style.marginTop = "1rem";
	pc.append(table("compare-procs", pcols, crow, null, "no process in either range"));
	return pc;
}

async function viewCollectors(v, id) {
	const st = state.status;
	if (!st) return;
	const c = card("Collectors");
	/* Which collectors the daemon runs by default (the others cost the workload more). */
	const defaults = ["totals", "fallbacks", "vmstat"];
	c.append(table("collectors", [
		{key: "name", label: "Name", get: r => r.name},
		{key: "state", label: "State", get: r => r.state, node: v => el("span", v, "state " + v)},
		{key: "gives", label: "Gives", get: r => NEEDS[r.name] || "", cls: () => "wrap"},
		{key: "source", label: "Source", get: r => (r.source || "") + (r.source_note ? ": " + r.source_note : ""),
			cls: () => "muted wrap", prio: 2},
		{key: "default", label: "Default", prio: 3, get: r => r.name === "faults" && st.split && st.split.mode === "bursts"
			? "in bursts (" + st.split.duty_permille / 10 + "% of each window): outcome counts are estimates"
			: defaults.includes(r.name) ? "default" : "opt-in", cls: () => "muted wrap"},
		{key: "reason", label: "Reason", get: r => r.reason, cls: () => "muted wrap"},
	], st.collectors || [], null, "no collectors"));
	const e = card("Events");
	e.style.marginTop = "1rem";
	e.append(table("events", [
		{key: "name", label: "Event", get: r => r.name},
		{key: "open", label: "Open", get: r => r.open ? "yes" : "no", cls: v => v === "no" ? "lost" : ""},
		{key: "samples", label: "Samples", num: true, get: r => r.samples, fmt: fmtNum},
		{key: "lost", label: "Lost", num: true, get: r => r.lost, fmt: fmtNum, cls: v => v ? "lost" : ""},
		{key: "wsamples", label: "Open window samples", num: true, get: r => r.window_samples, fmt: fmtNum, prio: 2},
		{key: "error", label: "Error", get: r => r.error, cls: () => "muted wrap"},
	], st.events || [], null, "no events"));
	const g = card("Global counters");
	g.style.marginTop = "1rem";
	g.append(table("globals", [
		{key: "family", label: "Family", get: r => r.family},
		{key: "name", label: "Name", get: r => r.name},
		{key: "window", label: "Open window", num: true, get: r => r.window, fmt: fmtNum},
		{key: "total", label: "Since start", num: true, get: r => r.total, fmt: fmtNum},
	], st.globals || [], null, "no global counters"));
	v.replaceChildren(c, e, g);
}

const VIEWS = {overview: viewOverview, processes: viewProcesses, process: viewProcess, units: viewUnits,
	unit: viewUnit, locks: viewLocks, compare: viewCompare, collectors: viewCollectors};

/* ---- navigation and refresh ---- */

/* The range as URL parameters: range=PRESET or from=T&to=T (unix seconds); "" for auto. */
function rangeQuery() {
	if (state.range === "custom" && state.custom)
		return "from=" + state.custom.since.toFixed(0) + "&to=" + state.custom.until.toFixed(0);
	return state.range === "auto" ? "" : "range=" + state.range;
}

/* Opens view @hash ("process/PID/START"), keeping the range. */
function go(hash) {
	const q = rangeQuery();
	location.hash = "#" + hash + (q ? "?" + q : "");
}

/* Reads the view and, when the URL has one, the range from location.hash. */
function parseHash() {
	const [path, query] = location.hash.replace(/^#/, "").split("?");
	const parts = path.split("/");
	state.view = VIEWS[parts[0]] ? parts[0] : "overview";
	state.arg = parts.slice(1).map(decodeURIComponent);
	if (state.view === "unit" && state.arg.length > 1) state.arg = [state.arg.join("/")];
	const p = new URLSearchParams(query || "");
	const from = Number(p.get("from")), to = Number(p.get("to"));
	if (PRESETS[p.get("range")]) state.range = p.get("range");
	else if (p.get("from") && p.get("to") && to > from) {
		state.range = "custom";
		state.custom = {since: from, until: to};
	}
}

/* Writes the view and the range into the URL without a new history entry (a reload or a shared
 * link shows the same), and the from/to fields the range shown. */
function syncLocation() {
	const path = location.hash.replace(/^#/, "").split("?")[0] || state.view;
	const q = rangeQuery();
	const want = "#" + path + (q ? "?" + q : "");
	if (location.hash !== want) history.replaceState(null, "", want);
	if (state.range !== "custom" && !state.editing) {
		const r = rangeA();
		$("custom-from").value = toLocalInput(r.since);
		$("custom-to").value = toLocalInput(r.until);
	}
}

function banner(text, bad) {
	const b = $("banner");
	b.hidden = !text;
	b.textContent = text || "";
	b.className = "banner" + (bad ? " bad" : "");
}

async function render() {
	const id = ++state.renderId;
	const v = $("view");
	v.dataset.state = "loading";
	v.dataset.view = state.view;
	const tab = {process: "processes", unit: "units"}[state.view] || state.view;
	for (const a of document.querySelectorAll("#tabs a"))
		a.classList.toggle("active", a.dataset.view === tab);
	const preset = state.range === "auto" && !autoSinceStart() ? "1h" : state.range;
	for (const b of document.querySelectorAll("#ranges button[data-range]"))
		b.classList.toggle("active", b.dataset.range === preset);
	$("range-text").textContent = (autoSinceStart() ? "since mmlockd started: " : "") + rangeText(rangeA());
	syncLocation();
	$("ranges").style.display = state.view === "collectors" ? "none" : "";
	$("range-label").textContent = state.view === "compare" ? "range A" : "range";
	try {
		await VIEWS[state.view](v, id);
		if (id === state.renderId) v.dataset.state = "ready";
	} catch (e) {
		if (id !== state.renderId) return;
		v.dataset.state = "error";
		v.replaceChildren(el("div", e.status === 503 ? "waiting for data: " + e.message : "cannot load this view: " + e.message, "banner bad"));
	}
}

function setCustom(r) {
	state.range = "custom";
	state.editing = false;
	state.custom = {since: r.since, until: r.until};
	$("custom-from").value = toLocalInput(r.since);
	$("custom-to").value = toLocalInput(r.until);
	render();
}

function renderStatus(st) {
	$("version").textContent = st.version || "–";
	$("kernel").textContent = st.kernel || "–";
	$("uptime").textContent = fmtDuration(st.uptime_seconds || 0);
	$("interval").textContent = st.interval_seconds + " s";
	$("stored").textContent = fmtNum(st.windows_stored);
	$("store-errors").textContent = fmtNum(st.store_errors);
	$("store-errors").className = st.store_errors ? "lost" : "";
	$("tracked").textContent = fmtNum(st.processes_tracked);
}

async function poll() {
	try {
		const st = await getJSON("api/v1/status");
		const first = !state.status;
		state.status = st;
		renderStatus(st);
		const failed = (st.collectors || []).filter(c => c.state === "failed").map(c => c.name);
		const lost = (st.events || []).filter(e => e.window_lost > 0).map(e => e.name);
		const notes = [];
		if (failed.length) notes.push("collector failed: " + failed.join(", "));
		if (lost.length) notes.push("events lost in the open window: " + lost.join(", "));
		banner(notes.join(" · "), false);
		/* A closed window is new data for a "last ..." range; the collectors view is live. */
		const closed = st.windows_stored !== state.stored;
		state.stored = st.windows_stored;
		if (first || state.view === "collectors" || (closed && state.range !== "custom"))
			render();
	} catch (e) {
		if (e.status === 503) banner("waiting for data: " + e.message, false);
		else banner("cannot reach mmlockd: " + e.message, true);
	} finally {
		setTimeout(poll, POLL_MS);
	}
}

for (const b of document.querySelectorAll("#ranges button[data-range]")) {
	b.addEventListener("click", () => {
		if (b.dataset.range === "custom") {
			const s = fromLocalInput($("custom-from").value), u = fromLocalInput($("custom-to").value);
			if (s === null || u === null || u <= s) { banner("custom range: 'from' must be before 'to'", true); return; }
			setCustom({since: s, until: u});
			return;
		}
		state.range = b.dataset.range;
		state.editing = false;
		render();
	});
}
for (const f of [$("custom-from"), $("custom-to")]) f.addEventListener("input", () => { state.editing = true; });
window.addEventListener("hashchange", () => { parseHash(); render(); });
parseHash();
{
	const r = rangeA();
	$("custom-from").value = toLocalInput(r.since);
	$("custom-to").value = toLocalInput(r.until);
}
poll();
