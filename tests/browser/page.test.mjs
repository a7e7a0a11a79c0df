// page.test.mjs: the checks of mmlockd's web page in headless Chromium (Debian's /usr/bin/chromium,
// driven by playwright-core, never a downloaded browser), run by test_browser.sh against a live
// daemon with a workload running. Each check prints "ok NAME" or "FAIL NAME: why":
//   overview_shows_nonzero_faults_and_fallback_share  the charts get points with non-zero faults/s
//       and fallback share once a window closes (the time it took is printed)
//   charts_cover_the_chosen_range                     the x axis spans the range, points inside it
//   workload_listed_with_faults_and_fallbacks         the processes table has the workload's pid
//       with non-zero faults and fallbacks
//   markup_in_a_process_name_is_text                  "<i>xss<script>" is a cell's text; no <i> and
//       no extra <script> element in the document
//   switching_range_refetches                         15 min and 7 d: range text, x axis, new data
//   opening_a_process_shows_its_charts                a click on its row opens its view and charts
//   units_and_locks_views_render                      units table; locks say how to collect them
//   compare_shows_both_ranges                         two custom ranges with data: both in the
//       table and both charts drawn
//   every_chart_fits_its_card_at_1400_and_800         on an ordinary load (real time, charts drawn
//       while their grid fills) and after a resize: each chart's canvas lies inside its card
//   lead_table_answers_above_the_fold                 at 1400x1000 the overview's first thing is the
//       processes that fall back most, its first rows visible without scrolling, naming the
//       workload with its fallback rate and share; readable (no horizontal overflow) at 800 px
//   legends_show_values_before_hover                  no legend reads "–" or is empty untouched
//   never_sampled_process_is_not_0_or_exact           a process no burst of the split caught (short
//       runs of a copy named "shortlived") reads "not sampled" in its split cells, never 0 or exact
//   range_and_view_in_the_url                         a preset lands in the URL and survives a reload;
//       the from/to fields follow it
//   waited_behind_not_collected_on_the_defaults       the workload's view says its mmap_lock holders
//       are not collected (and which --collectors would), no table, no chart; its charts fit their
//       cards at 1400 and 800 px
//   poll_reads_status_only_and_overview_the_rows_it_draws  over 12 s of the overview: no request for
//       /api/v1/processes, one /api/v1/status (under 32 KB) per 2-second poll, and the overview's
//       /api/v1/top asks for the rows it draws (9 processes, 5 units), each reply under 64 KB
//   split_estimates_marked_and_too_wide_ones_not_drawn  the split charts draw no estimate whose 95%
//       interval is wider than its value, and their legends mark estimates with "≈"
//   exited_process_legends_show_its_last_window      the view of the copy named XSS_NAME (it exited)
//       ends its series at its last window: the legends say so and its faults do not read 0
//   one_time_format_on_the_page                      every time shown (text, fields, axis ticks) is
//       local YYYY-MM-DD HH:MM:SS or a part of it, on every view
//   compare_takes_a_as_baseline_at_reports_rates      the same two ranges as `mmlockd report --compare
//       A B` (MMLOCKD, DB): the page's faults/s of A and B and their change match report's, the
//       change is B's relative to A, and A's and B's charts share their y scale
//   every_table_fits_its_card_at_1400_and_800         on every view, every table's scrollWidth is at
//       most its card's clientWidth (screenshots of each view at both sizes)
//   no_request_fetches_every_process                  the whole run never asked for /api/v1/processes
//       without a pid
//   no_console_errors                                 nothing logged as an error, no page error
// With HOLDER_PID set (test_browser.sh's second run: the contention collector on, holder_workload
// run), these instead:
//   waited_behind_names_the_mprotect_holder           the view of pid HOLDER_PID has a "Waited behind"
//       row of holder_workload (HOLDER_PID) holding mmap_lock for write doing mprotect, and its
//       chart a non-zero mprotect series
//   waited_behind_chart_fits_its_card_at_1400_and_800 that view's charts inside their cards
//   locks_view_names_mmap_lock_holders                the Lock contention view's holder column, and at
//       800 px its table inside its card with the process and holder columns shown
//   no_console_errors
// Screenshots of each view go to $SHOTS (dark, and the overview also light).
// Usage: node page.test.mjs PATH/TO/playwright-core/index.mjs (environment: URL, SHOTS, WL_PID,
// WL_START, XSS_NAME, SHORT_NAME, CHROMIUM, MMLOCKD, DB; or URL, SHOTS, CHROMIUM, HOLDER_PID).
import {execFileSync} from "child_process";
import fs from "fs";
import os from "os";
import path from "path";

const {chromium} = await import(process.argv[2]);
const {URL, SHOTS, WL_PID, WL_START, XSS_NAME, CHROMIUM, SHORT_NAME, HOLDER_PID, MMLOCKD, DB} = process.env;
const WINDOW_WAIT_MS = 40000;

let failed = 0;
const ok = name => console.log("ok " + name);
const fail = (name, why) => { failed++; console.log("FAIL " + name + ": " + why); };
async function check(name, fn) {
	try {
		const why = await fn();
		if (why) fail(name, why);
		else ok(name);
	} catch (e) {
		fail(name, e.message.split("\n")[0]);
	}
}

const userDir = fs.mkdtempSync(path.join(os.tmpdir(), "mmlockd-chromium-"));
const launch = scheme => chromium.launchPersistentContext(userDir + "-" + scheme, {
	executablePath: CHROMIUM, headless: true, colorScheme: scheme,
	viewport: {width: 1400, height: 1000},
	args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-quic"],
});
const ctx = await launch("dark");
const page = await ctx.newPage();
const errors = [];
page.on("console", m => { if (m.type() === "error") errors.push("console: " + m.text()); });
page.on("pageerror", e => errors.push("page error: " + e.message));
/* A load or reload of the test's own aborts the page's requests in flight (its 2-second poll):
 * net::ERR_ABORTED then is the navigation's doing, not the daemon's; any other failure counts. */
let navigating = 0;
page.on("requestfailed", r => {
	const why = (r.failure() || {}).errorText || "no reason";
	if (navigating && why === "net::ERR_ABORTED") return;
	errors.push("request failed: " + r.url() + " (" + why + ", " + new Date().toISOString() + ")");
});
async function navigate(fn) {
	navigating++;
	try { return await fn(); } finally { navigating--; }
}
const external = [];
page.on("request", r => { if (!r.url().startsWith(URL) && !r.url().startsWith("data:")) external.push(r.url()); });
/* Every API request of the page, with the bytes of its reply (for the payload checks). */
const apiLog = [];
page.on("response", async r => {
	if (!r.url().startsWith(URL + "api/")) return;
	const e = {url: r.url().slice(URL.length), at: Date.now(), bytes: null};
	apiLog.push(e);
	try { e.bytes = (await r.body()).length; } catch (err) { /* aborted by a navigation */ }
});

const shot = async name => {
	await page.waitForTimeout(300);
	await page.screenshot({path: path.join(SHOTS, name + ".png"), fullPage: true});
};
const ready = () => page.waitForSelector("#view[data-state=ready]", {state: "attached", timeout: 20000});
async function gotoView(hash) {
	await page.evaluate(h => { location.hash = h; }, hash);
	await page.waitForFunction(h => document.getElementById("view").dataset.view === h.split("/")[0] &&
		document.getElementById("view").dataset.state === "ready", hash, {timeout: 20000});
}
/* Chart @id's x values and its series' y values, [] when missing. */
const chartData = id => page.evaluate(i => {
	const u = window.mmlockd.charts[i];
	return u && u.root.isConnected ? {data: u.data, min: u.scales.x.min, max: u.scales.x.max} : null;
}, id);
const nonzero = arr => (arr || []).some(v => v !== null && v > 0);
/* Why the fallbacks collector cannot count here, or null: on the perf source it cannot attribute
 * read locks while another BPF program is attached to the mmap_lock tracepoints (another mmlockd
 * on the BPF source, bpftrace), and says so in its reason. */
async function fallbacksBlind() {
	const st = await (await fetch(URL + "api/v1/status")).json();
	const c = (st.collectors || []).find(x => x.name === "fallbacks");
	if (!c || c.state !== "running") return "the fallbacks collector is " + (c ? c.state : "missing");
	return /another probe/.test(c.reason) ? c.reason : null;
}

/* Polls the API until @fn(reply) returns a value (then returns it), for up to @ms. */
async function until(url, fn, ms) {
	const end = Date.now() + ms;
	for (;;) {
		const v = fn(await (await fetch(URL + url)).json());
		if (v || Date.now() > end) return v;
		await new Promise(r => setTimeout(r, 300));
	}
}

/* Every chart's canvas inside its card, and the card inside the viewport's width. */
const chartsOutside = () => page.evaluate(() => {
	const bad = [];
	for (const [id, u] of Object.entries(window.mmlockd.charts)) {
		if (!u.root.isConnected) continue;
		const card = u.root.parentElement.getBoundingClientRect();
		const c = u.root.querySelector("canvas").getBoundingClientRect();
		if (c.left < card.left - 0.5 || c.right > card.right + 0.5 || card.right > document.documentElement.clientWidth + 0.5)
			bad.push(id + ": canvas " + Math.round(c.left) + ".." + Math.round(c.right) + " in card " +
				Math.round(card.left) + ".." + Math.round(card.right));
	}
	return bad;
});

/* The second run of test_browser.sh (HOLDER_PID set): a daemon with the contention collector and
 * holder_workload, for the process view's "Waited behind" only. */
if (HOLDER_PID) {
	await holderChecks();
	await finish();
}

const loadedAt = Date.now() / 1000;
await navigate(() => page.goto(URL));
await ready();

let blind = null;
await check("overview_shows_nonzero_faults_and_fallback_share", async () => {
	/* The first stored window with the workload's faults (and fallbacks, unless the collector
	 * says it cannot count them): the overview must draw it within a poll or two (2 s each) of
	 * that window's close, or of the page's load when that came later. */
	const t0 = Date.now();
	let first = null;
	const want = async () => {
		first = await until("api/v1/series?" + new URLSearchParams({since: WL_START - 60, pid: WL_PID, points: 5000}), r => {
			const c = r.series.columns;
			return r.series.rows.find(x => x[c.indexOf("minflt")] > 0 && (blind || x[c.indexOf("fallback_locks")] > 0));
		}, WINDOW_WAIT_MS);
	};
	await want();
	if (!first) {
		blind = await fallbacksBlind();
		if (!blind) return "no stored window has the workload's faults and fallbacks";
		console.log("# SKIP the fallback checks: " + blind);
		await want();
		if (!first) return "no stored window has the workload's faults";
	}
	const closed = first[1]; /* ts_end */
	await page.waitForFunction(([t, blind]) => {
		const c = window.mmlockd.charts;
		const at = u => u && u.data[0].some((x, i) => x >= t - 0.01 && u.data.slice(1).some(a => a[i] > 0));
		return at(c["ov-faults"]) && (blind || at(c["ov-share"]));
	}, [closed, blind], {timeout: WINDOW_WAIT_MS, polling: 250});
	const shownAt = Date.now() / 1000;
	const lag = shownAt - Math.max(closed, loadedAt);
	console.log(`# the overview drew the workload's first stored window ${(shownAt - WL_START).toFixed(1)} s after ` +
		`the workload started, ${(shownAt - closed).toFixed(1)} s after that window closed, ${lag.toFixed(1)} s after ` +
		`it or the page's load (checks took ${((Date.now() - t0) / 1000).toFixed(1)} s)`);
	if (lag > 6) return "shown " + lag.toFixed(1) + " s after its window closed";
	const stat = await page.locator(".stat", {hasText: "faults/s over the range"}).innerText();
	if (/^\s*(0|–)\s/.test(stat)) return "the faults/s card reads " + JSON.stringify(stat);
	return null;
});

await check("every_chart_fits_its_card_at_1400_and_800", async () => {
	/* A fresh load as a user makes it: charts are drawn while their grid fills. */
	for (const [w, h] of [[1400, 1000], [800, 900]]) {
		await page.setViewportSize({width: w, height: h});
		await navigate(() => page.goto(URL));
		await ready();
		await page.waitForTimeout(500);
		const n = await page.evaluate(() => Object.values(window.mmlockd.charts).filter(u => u.root.isConnected).length);
		if (n < 3) return w + " px: only " + n + " charts drawn";
		const bad = await chartsOutside();
		if (bad.length) return w + " px: " + bad.slice(0, 3).join("; ");
		await shot("overview-" + w);
	}
	/* And after the window is resized, without a reload. */
	await page.setViewportSize({width: 1400, height: 1000});
	await page.waitForTimeout(500);
	const bad = await chartsOutside();
	if (bad.length) return "after resizing to 1400 px: " + bad.slice(0, 3).join("; ");
	return null;
});

await check("lead_table_answers_above_the_fold", async () => {
	await page.setViewportSize({width: 1400, height: 1000});
	await navigate(() => page.goto(URL));
	await ready();
	await page.evaluate(() => window.scrollTo(0, 0));
	const r = await page.evaluate(() => {
		const rows = [...document.querySelectorAll("#lead-procs tbody tr")].slice(0, 3);
		return {n: rows.length, bottom: Math.max(...rows.map(tr => tr.getBoundingClientRect().bottom)), h: innerHeight,
			first: document.getElementById("view").firstElementChild.id,
			answer: (document.getElementById("lead-answer") || {}).textContent || "",
			heads: [...document.querySelectorAll("#lead-procs thead th")].map(th => th.textContent)};
	});
	console.log("# lead: " + JSON.stringify(r));
	if (r.first !== "lead") return "the overview starts with #" + r.first + ", not the lead table";
	if (!r.n) return "the lead table has no rows";
	if (r.bottom > r.h) return "its first rows end at " + Math.round(r.bottom) + " px, below the fold (" + r.h + ")";
	for (const h of ["Fallbacks/s", "Share of faults", "Waited"])
		if (!r.heads.includes(h)) return "no column " + h + ": " + r.heads.join(", ");
	if (!blind) {
		if (!r.answer.includes("outcome_workloa") || !/fallbacks\/s/.test(r.answer) || !/%/.test(r.answer))
			return "the answer does not name the workload with its rate and share: " + r.answer;
	}
	await page.setViewportSize({width: 800, height: 900});
	await page.waitForTimeout(300);
	const over = await page.evaluate(() => {
		const lead = document.getElementById("lead").getBoundingClientRect();
		const t = document.getElementById("lead-procs").getBoundingClientRect();
		return {lead: lead.right, table: t.right, page: document.documentElement.scrollWidth, w: innerWidth};
	});
	await shot("overview-800-lead");
	await page.setViewportSize({width: 1400, height: 1000});
	if (over.page > over.w) return "at 800 px the page scrolls sideways (" + over.page + " px wide)";
	if (over.table > over.lead + 0.5) return "at 800 px the lead table overflows its card";
	return null;
});

await check("poll_reads_status_only_and_overview_the_rows_it_draws", async () => {
	/* 12 s on the overview: six polls and, with 10-second windows, at least one closed window
	 * (a new render of the overview). */
	await gotoView("overview");
	const from = apiLog.length;
	await page.waitForTimeout(12000);
	const seen = apiLog.slice(from);
	const of = route => seen.filter(e => e.url.startsWith("api/v1/" + route));
	const summary = seen.map(e => e.url.split("&fields=")[0] + " " + e.bytes + " B");
	console.log("# 12 s of the overview: " + seen.length + " requests, " + seen.reduce((a, e) => a + (e.bytes || 0), 0) +
		" bytes: " + JSON.stringify(summary.slice(0, 12)));
	if (of("processes").length) return "it fetched " + of("processes")[0].url;
	const st = of("status");
	if (st.length < 4 || st.length > 8) return st.length + " status requests in 12 s, expected one per 2 s";
	const big = st.find(e => e.bytes > 32768);
	if (big) return "a status reply of " + big.bytes + " bytes";
	const tops = of("top");
	if (!tops.length) return "no window closed in 12 s: no overview render to look at";
	for (const e of tops) {
		const q = new URLSearchParams(e.url.split("?")[1]);
		const want = q.get("by") === "cgroup" ? 5 : 9;
		if (Number(q.get("limit")) > want) return "the overview asked for " + q.get("limit") + " rows: " + e.url.slice(0, 120);
		if (q.get("order") !== "fallbacks") return "its rows are not the processes that fall back most: " + e.url.slice(0, 120);
		if (e.bytes > 65536) return "a top reply of " + e.bytes + " bytes";
	}
	return null;
});

await check("split_estimates_marked_and_too_wide_ones_not_drawn", async () => {
	const st = await (await fetch(URL + "api/v1/status")).json();
	if (st.split.mode !== "bursts") { console.log("# SKIP: the split runs " + st.split.mode); return null; }
	await gotoView("overview");
	const r = await page.evaluate(() => {
		const out = {estimated: 0, drawn: 0, hidden: 0, bad: [], legends: []};
		for (const id of ["ov-split", "ov-split-fb"]) {
			const u = window.mmlockd.charts[id];
			if (!u || !u.root.isConnected) { out.bad.push("no chart " + id); continue; }
			u.mmLines.forEach((l, i) => {
				l.values.forEach((v, k) => {
					if (v === null || !l.est[k]) return;
					out.estimated++;
					const wide = l.err[k] > 0 && 2 * l.err[k] > v, y = u.data[i + 1][k];
					if (wide && y !== null) out.bad.push(id + " " + l.label + " draws " + v + " ±" + l.err[k]);
					if (wide) out.hidden++;
					else if (y !== null) out.drawn++;
				});
				const k = l.values.length - 1 - [...l.values].reverse().findIndex(v => v !== null);
				const text = u.root.querySelectorAll(".u-legend .u-value")[i + 1].textContent;
				out.legends.push(text);
				if (l.est[k] && !/^(≈ |too few sampled)/.test(text)) out.bad.push(id + " " + l.label + " legend " + JSON.stringify(text));
			});
		}
		return out;
	});
	console.log("# split estimates: " + r.estimated + " points, " + r.drawn + " drawn, " + r.hidden + " too wide, not drawn; legends " +
		JSON.stringify(r.legends));
	if (r.bad.length) return r.bad.slice(0, 3).join("; ");
	if (!r.estimated) return "no estimated point in the split charts while the split runs in bursts";
	return null;
});

await check("legends_show_values_before_hover", async () => {
	await page.mouse.move(1, 1);
	const bad = await page.evaluate(() => {
		const out = [];
		for (const [id, u] of Object.entries(window.mmlockd.charts)) {
			if (!u.root.isConnected) continue;
			for (const v of u.root.querySelectorAll(".u-legend .u-value"))
				if (!v.textContent.trim() || v.textContent.trim() === "–" || v.textContent.trim() === "--")
					out.push(id + ": " + JSON.stringify(v.textContent));
		}
		return out;
	});
	return bad.length ? "legend values before hover: " + bad.slice(0, 4).join(", ") : null;
});
await ready();
await shot("overview");

await check("charts_cover_the_chosen_range", async () => {
	/* No range chosen and a daemon younger than the hour: the range is the time since it
	 * started (its data's span), not an hour with the data in a sliver. */
	const st = await (await fetch(URL + "api/v1/status")).json();
	const c = await chartData("ov-faults");
	if (!c) return "no faults chart";
	const span = c.max - c.min;
	const want = Math.max(st.taken - st.started + st.interval_seconds, 10 * st.interval_seconds, 60);
	if (Math.abs(span - want) > 10) return "x axis spans " + span + " s, expected the daemon's " + want.toFixed(0) + " s";
	const xs = c.data[0];
	if (!xs.length) return "no points";
	if (xs.some(x => x < c.min - 1 || x > c.max + 1)) return "points outside the range";
	return null;
});

await check("workload_listed_with_faults_and_fallbacks", async () => {
	await page.click("#tabs a[data-view=processes]");
	await ready();
	await page.waitForSelector("#procs tbody tr");
	const row = await page.evaluate(pid => {
		const t = document.getElementById("procs");
		const heads = [...t.querySelectorAll("thead th")].map(th => th.textContent);
		for (const tr of t.querySelectorAll("tbody tr")) {
			const cells = [...tr.children].map(td => td.textContent);
			if (cells[heads.indexOf("PID")] === pid)
				return {faults: cells[heads.indexOf("Faults")], fallbacks: cells[heads.indexOf("Fallbacks")],
					comm: cells[heads.indexOf("Command")]};
		}
		return null;
	}, WL_PID);
	if (!row) return "pid " + WL_PID + " is not in the table";
	console.log("# workload row: " + JSON.stringify(row));
	const n = s => parseFloat(String(s).replace(/,/g, ""));
	if (!(n(row.faults) > 0)) return "faults " + row.faults;
	if (!blind && !(n(row.fallbacks) > 0)) return "fallbacks " + row.fallbacks;
	return null;
});
await shot("processes");

await check("markup_in_a_process_name_is_text", async () => {
	/* It ran for a second at the start: wait until the store has it. */
	const stored = await until("api/v1/top?" + new URLSearchParams({since: WL_START - 60, limit: 10000, fields: "minflt"}),
		r => r.rows.some(x => x.comm === XSS_NAME), WINDOW_WAIT_MS);
	if (!stored) return "the store never got a process named " + XSS_NAME;
	await page.click("#tabs a[data-view=overview]");
	await ready();
	await page.click("#tabs a[data-view=processes]");
	await ready();
	await page.fill("#view input[type=search]", "xss");
	const r = await page.evaluate(name => ({
		cells: [...document.querySelectorAll("#procs tbody td")].filter(td => td.textContent === name).length,
		italics: document.querySelectorAll("#view i").length,
		scripts: document.querySelectorAll("script").length,
	}), XSS_NAME);
	await shot("processes-markup-name");
	await page.fill("#view input[type=search]", "");
	if (r.cells < 1) return "no cell reads " + XSS_NAME;
	if (r.italics) return r.italics + " <i> elements: the name was inserted as HTML";
	if (r.scripts !== 2) return r.scripts + " <script> elements, the page has 2";
	return null;
});

await check("exited_process_legends_show_its_last_window", async () => {
	/* The copy named XSS_NAME ran for a second at the start and exited: its view's series ends
	 * with its last window, so its legends read that window (non-zero faults), not the zeros of
	 * the windows after it, and say it exited. */
	const r = await (await fetch(URL + "api/v1/top?" + new URLSearchParams({since: WL_START - 60, limit: 10000, fields: "minflt"}))).json();
	const p = r.rows.find(x => x.comm === XSS_NAME && x.minflt > 0);
	if (!p) return "no stored run of " + XSS_NAME + " with faults";
	await gotoView("process/" + p.pid + "/" + p.start_time.toFixed(3));
	const got = await page.evaluate(() => {
		const u = window.mmlockd.charts["p-faults"];
		if (!u || !u.root.isConnected) return null;
		const v = [...u.root.querySelectorAll(".u-legend .u-value")].map(e => e.textContent);
		return {legend: v, lastX: u.data[0][u.data[0].length - 1]};
	});
	if (!got) return "its view has no faults chart";
	console.log("# exited process legends: " + JSON.stringify(got.legend));
	if (!/^exited; its last window, /.test(got.legend[0])) return "its time legend reads " + JSON.stringify(got.legend[0]);
	if (/^0 /.test(got.legend[1])) return "its minor faults legend reads " + JSON.stringify(got.legend[1]);
	if (got.lastX > p.last + 0.01) return "its series goes on after its last window (" + got.lastX + " > " + p.last + ")";
	return null;
});

await check("switching_range_refetches", async () => {
	await page.click("#tabs a[data-view=overview]");
	await ready();
	for (const [btn, secs] of [["15m", 900], ["7d", 7 * 86400]]) {
		await page.click(`#ranges button[data-range="${btn}"]`);
		await ready();
		const c = await chartData("ov-faults");
		if (!c) return btn + ": no faults chart";
		if (Math.abs(c.max - c.min - secs) > 5) return btn + ": x axis spans " + (c.max - c.min) + " s";
		if (!nonzero(c.data[1])) return btn + ": no non-zero faults";
		const text = await page.textContent("#range-text");
		if (!text.includes(btn === "15m" ? "15m" : "7d")) return btn + ": range text " + text;
		if (btn === "7d") await shot("overview-7d");
	}
	await page.click('#ranges button[data-range="1h"]');
	await ready();
	const c = await chartData("ov-faults");
	if (!c || Math.abs(c.max - c.min - 3600) > 5) return "1h: x axis spans " + (c ? c.max - c.min : "nothing");
	return null;
});

await check("range_and_view_in_the_url", async () => {
	await gotoView("processes");
	await page.click('#ranges button[data-range="15m"]');
	await ready();
	const hash = await page.evaluate(() => location.hash);
	if (hash !== "#processes?range=15m") return "the URL reads " + hash;
	const fields = await page.evaluate(() => [document.getElementById("custom-from").value,
		document.getElementById("custom-to").value, toLocalInput(Date.now() / 1000 - 900)]);
	if (fields[0].slice(0, 16) !== fields[2].slice(0, 16)) return "from reads " + fields[0] + " for a 15 min range (" + fields[2] + ")";
	await navigate(() => page.reload());
	await ready();
	const after = await page.evaluate(() => [document.getElementById("view").dataset.view, window.mmlockd.state.range]);
	if (after[0] !== "processes" || after[1] !== "15m") return "after a reload: view " + after[0] + ", range " + after[1];
	await page.click('#ranges button[data-range="1h"]');
	await ready();
	return null;
});

await check("never_sampled_process_is_not_0_or_exact", async () => {
	/* The short runs of SHORT_NAME (test_browser.sh): with the split in bursts (2% of each
	 * window) most are caught by no burst. Which, the API says: no estimated window, and its
	 * outcome counts null (unknown), not 0. */
	const OUTS = ["faults_vma", "faults_vma_retry", "faults_mmap_retry", "faults_mmap_abort", "faults_mmap_unknown"];
	const st = await (await fetch(URL + "api/v1/status")).json();
	if (st.split.mode !== "bursts") { console.log("# SKIP: the split runs " + st.split.mode); return null; }
	const fields = "minflt,majflt,split_estimated,faults_vma,faults_vma_retry,faults_mmap_retry,faults_mmap_abort,faults_mmap_unknown";
	const never = await until("api/v1/top?" + new URLSearchParams({since: WL_START - 60, limit: 10000, fields}), r => {
		const w = r.rows.filter(x => x.comm === SHORT_NAME && x.minflt + x.majflt > 0 && x.split_estimated === 0);
		const zero = w.filter(x => OUTS.some(o => x[o] !== null));
		if (zero.length) throw new Error("never-sampled rows with outcome counts that are not null: " + JSON.stringify(zero[0]));
		return w.length ? w : null;
	}, WINDOW_WAIT_MS);
	if (!never) return "no run of " + SHORT_NAME + " escaped the bursts (or none was stored)";
	await gotoView("processes");
	await page.fill("#view input[type=search]", SHORT_NAME);
	const rows = await page.evaluate(() => {
		const t = document.getElementById("procs");
		const heads = [...t.querySelectorAll("thead th")].map(th => th.textContent);
		return [...t.querySelectorAll("tbody tr")].map(tr => {
			const c = [...tr.children].map(td => td.textContent);
			return {pid: c[heads.indexOf("PID")], vma: c[heads.indexOf("Under VMA lock")],
				mmap: c[heads.indexOf("Under mmap_lock")], split: c[heads.indexOf("Split")]};
		});
	});
	await shot("processes-never-sampled");
	await page.fill("#view input[type=search]", "");
	let checked = 0;
	for (const p of never) {
		const row = rows.find(r => r.pid === String(p.pid));
		if (!row) continue;
		checked++;
		for (const v of [row.vma, row.mmap, row.split])
			if (v === "0" || v === "exact" || v === undefined) return "pid " + p.pid + " (never sampled) reads " + JSON.stringify(row);
		if (row.split !== "not sampled") return "pid " + p.pid + " split reads " + row.split;
	}
	if (!checked) return "none of the never-sampled pids " + never.map(p => p.pid).join(",") + " is in the table";
	/* Its own view: no split chart of zeros, a note saying it was not sampled. */
	const p = never.find(x => rows.some(r => r.pid === String(x.pid)));
	await gotoView("process/" + p.pid + "/" + p.start_time.toFixed(3));
	if (await chartData("p-split")) return "its view draws a split chart";
	const txt = await page.textContent("#p-split-unknown");
	if (!/not sampled/i.test(txt || "")) return "its split box reads " + JSON.stringify(txt);
	await shot("process-never-sampled");
	return null;
});

await check("opening_a_process_shows_its_charts", async () => {
	await page.click("#tabs a[data-view=processes]");
	await ready();
	await page.click(`#procs tbody tr:has(td:text-is("${WL_PID}"))`);
	await page.waitForFunction(() => document.getElementById("view").dataset.view === "process" &&
		document.getElementById("view").dataset.state === "ready", null, {timeout: 20000});
	const name = await page.textContent("#view h2 .comm");
	if (name !== "outcome_workloa") return "the view names " + JSON.stringify(name);
	const c = await chartData("p-faults");
	if (!c || !nonzero(c.data[1])) return "its faults chart has no non-zero point";
	const s = await chartData("p-fallbacks");
	if (!blind && (!s || !nonzero(s.data[1]))) return "its fallbacks chart has no non-zero point";
	await shot("process");
	return null;
});

await check("waited_behind_not_collected_on_the_defaults", async () => {
	/* The defaults run no contention collector: the workload's view says what would collect
	 * whom it waited behind, draws no chart of zeros, and its charts fit at 1400 and 800 px. */
	if ((await (await fetch(URL + "api/v1/status")).json()).collectors.some(c => c.name === "contention" && c.state === "running"))
		return "the contention collector runs on the defaults";
	const r = await (await fetch(URL + "api/v1/top?" + new URLSearchParams({pid: WL_PID, since: 0, limit: 1, fields: "minflt"}))).json();
	if (!r.rows.length) return "the workload is not stored";
	const hash = "process/" + WL_PID + "/" + r.rows[0].start_time.toFixed(3);
	await gotoView(hash);
	const text = await page.textContent("#p-behind");
	if (!/not collected/.test(text) || !text.includes("--collectors") || !text.includes("contention"))
		return "its waited-behind section reads " + JSON.stringify(text.slice(0, 200));
	if (await chartData("p-behind-ops")) return "it draws a waited-behind chart";
	if (await page.$("#p-behind-holders")) return "it shows a waited-behind table";
	return fitsAt1400And800("process-not-collected");
});

await check("units_and_locks_views_render", async () => {
	await gotoView("units");
	const rows = await page.locator("#units tbody tr.click").count();
	if (!rows) return "no unit rows";
	await shot("units");
	await page.click("#units tbody tr.click >> nth=0");
	await page.waitForFunction(() => document.getElementById("view").dataset.view === "unit" &&
		document.getElementById("view").dataset.state === "ready", null, {timeout: 20000});
	if (!(await chartData("u-faults"))) return "the unit view has no faults chart";
	await shot("unit");
	await gotoView("locks");
	const text = await page.textContent("#view");
	if (!text.includes("--collectors") || !text.includes("contention"))
		return "the locks view does not say how to collect contention: " + text.slice(0, 200);
	await shot("locks");
	await gotoView("collectors");
	await shot("collectors");
	return null;
});

await check("compare_shows_both_ranges", async () => {
	/* B: the first stored window with the workload's faults, A: from its end on, which holds
	 * the next one (halving the time so far instead left A empty when the check came soon
	 * after the first window). */
	const rows = await until("api/v1/series?" + new URLSearchParams({since: WL_START - 60, pid: WL_PID, points: 5000}), r => {
		const c = r.series.columns;
		const w = r.series.rows.filter(x => x[c.indexOf("minflt")] > 0);
		return w.length >= 2 ? w : null;
	}, 2 * WINDOW_WAIT_MS);
	if (!rows) return "fewer than two stored windows with the workload's faults";
	/* The fields hold whole seconds and a range takes the windows that ended in it: B ends at
	 * the second after its window's end, A at the second after the last stored one's (in the
	 * past, so the next check's `report` sees the same windows). */
	const t0 = rows[0][0] - 1, mid = Math.ceil(rows[0][1]), end = Math.ceil(rows[rows.length - 1][1]);
	const fmt = t => page.evaluate(x => toLocalInput(x), t);
	await gotoView("overview");
	await page.fill("#custom-from", await fmt(mid));
	await page.fill("#custom-to", await fmt(end));
	await page.click("#custom-apply");
	await ready();
	await gotoView("compare");
	await page.fill("#compare-from", await fmt(t0));
	await page.fill("#compare-to", await fmt(mid));
	await page.click("#compare-apply");
	await ready();
	const cells = await page.evaluate(() => [...document.querySelectorAll("#compare-table tbody tr")]
		.map(tr => [...tr.children].map(td => td.textContent)));
	console.log("# compare table: " + JSON.stringify(cells));
	const faults = cells.find(r => r[0] === "Page faults");
	if (!faults) return "no Page faults row";
	if (/^(–|unknown)$/.test(faults[1]) || /^(–|unknown)$/.test(faults[2])) return "a range has no faults: " + faults.join(" | ");
	const a = await chartData("ca-faults"), b = await chartData("cb-faults");
	if (!a || !b) return "missing chart " + (!a ? "A" : "B");
	if (!nonzero(a.data[1]) || !nonzero(b.data[1])) return "a chart has no non-zero point";
	if (a.min === b.min) return "both charts show the same range";
	await shot("compare");
	return null;
});

await check("compare_takes_a_as_baseline_at_reports_rates", async () => {
	/* The ranges the page compares (as it parsed them), given to `mmlockd report --compare A B`:
	 * the same faults/s on both sides and the same change, B relative to A. Both ranges end in
	 * the past (the previous check), so no window closing in between changes either side. */
	if (!MMLOCKD || !DB) { console.log("# SKIP: no MMLOCKD and DB to run report with"); return null; }
	const rg = await page.evaluate(() => [window.mmlockd.state.custom, window.mmlockd.state.compareCustom]);
	if (!rg[0] || !rg[1]) return "the page has no custom A and B";
	const spec = x => x.since.toFixed(0) + ".." + x.until.toFixed(0);
	const out = execFileSync(MMLOCKD, ["report", "--db", DB, "--compare", spec(rg[0]), spec(rg[1]), "--json"], {encoding: "utf8"});
	const row = JSON.parse(out).rows.find(x => /^(page )?faults( \/s)?$/i.test(x.metric) && (x.unit === undefined || x.unit === "/s"));
	if (!row) return "report --compare has no faults /s row: " + out.slice(0, 300);
	const num = x => Number(String(x).replace(/[~,+%\s]/g, ""));
	const cells = await page.evaluate(() => ({
		head: [...document.querySelectorAll("#compare-table thead th")].map(th => th.textContent),
		faults: [...document.querySelectorAll("#compare-table tbody tr")].map(tr => [...tr.children].map(td => td.textContent))
			.find(c => c[0] === "Page faults"),
		rates: [window.mmlockd.charts["ca-faults"], window.mmlockd.charts["cb-faults"]].map(u => u && u.scales.y.max),
	}));
	console.log("# report: " + JSON.stringify(row) + "; page: " + JSON.stringify(cells));
	if (cells.head[3] !== "Change (B vs A)") return "the change column reads " + cells.head[3];
	const page3 = s => num(s.replace(/ \/s$/, "").replace(/k$/, "e3").replace(/M$/, "e6"));
	const [pa, pb] = [page3(cells.faults[1]), page3(cells.faults[2])];
	const near = (x, y) => Math.abs(x - y) <= 0.01 * Math.max(Math.abs(x), Math.abs(y)) + 0.01;
	if (!near(pa, num(row.a)) || !near(pb, num(row.b)))
		return "faults/s A " + pa + " B " + pb + " on the page, " + row.a + " and " + row.b + " in report";
	const want = 100 * (num(row.b) - num(row.a)) / num(row.a);
	if (Math.abs(num(cells.faults[3]) - want) > 0.15) return "change " + cells.faults[3] + " on the page, report's B vs A " + want.toFixed(1);
	if (!cells.rates[0] || cells.rates[0] !== cells.rates[1]) return "A's and B's y scales differ: " + cells.rates.join(" vs ");
	return null;
});

await check("one_time_format_on_the_page", async () => {
	/* Every view's text, fields and axis ticks: a time is YYYY-MM-DD HH:MM:SS (or, on an axis, its
	 * clock or its day); no month names, no D/M or M/D dates, no AM/PM. */
	const bad = [];
	for (const view of ["overview", "processes", "units", "locks", "compare", "collectors"]) {
		await gotoView(view);
		const r = await page.evaluate(() => {
			const text = document.body.innerText;
			const fields = [...document.querySelectorAll("input[type=text]")].map(i => i.value);
			const ticks = Object.values(window.mmlockd.charts).filter(u => u.root.isConnected)
				.flatMap(u => (u.axes[0]._values || []).map(String));
			return {text, fields, ticks};
		});
		const other = r.text.match(/\b\d{1,2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\b|\b\d{1,2}\/\d{1,2}\b|\b\d{1,2}:\d{2}\s?[AP]M\b/);
		if (other) bad.push(view + ": text has " + JSON.stringify(other[0]));
		for (const m of r.text.matchAll(/\d{4}-\d{2}-\d{2}[^\n]{0,9}/g))
			if (!/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}/.test(m[0])) bad.push(view + ": " + JSON.stringify(m[0]));
		for (const f of r.fields) if (!/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/.test(f)) bad.push(view + ": field " + JSON.stringify(f));
		for (const t of r.ticks)
			if (t && !/^(\d{2}:\d{2}(:\d{2})?(\n\d{4}-\d{2}-\d{2})?|\d{4}-\d{2}-\d{2})$/.test(t)) bad.push(view + ": tick " + JSON.stringify(t));
	}
	return bad.length ? bad.slice(0, 4).join("; ") : null;
});

await check("every_table_fits_its_card_at_1400_and_800", async () => {
	/* Every view at both sizes, the process and unit views too: every table inside its card
	 * (columns hidden by priority, long paths cut with a tooltip), a screenshot of each. */
	const r = await (await fetch(URL + "api/v1/top?" + new URLSearchParams({pid: WL_PID, since: 0, limit: 1, fields: "minflt"}))).json();
	const u = await (await fetch(URL + "api/v1/top?" + new URLSearchParams({since: 0, limit: 1, by: "cgroup", fields: "minflt"}))).json();
	const views = ["overview", "processes", "units", "locks", "compare", "collectors"];
	if (r.rows.length) views.push("process/" + WL_PID + "/" + r.rows[0].start_time.toFixed(3));
	if (u.rows.length) views.push("unit/" + encodeURIComponent(u.rows[0].cgroup));
	const bad = [];
	for (const [w, h] of [[1400, 1000], [800, 900]]) {
		await page.setViewportSize({width: w, height: h});
		for (const view of views) {
			await gotoView(view);
			await page.waitForTimeout(400); /* the fit runs in the frame after a resize */
			const over = await tablesOutside();
			for (const o of over) bad.push(w + " px " + view.split("/")[0] + ": " + o.id + " " + o.w + " > " + o.card);
			await shot("fit-" + view.split("/")[0] + "-" + w);
		}
	}
	await page.setViewportSize({width: 1400, height: 1000});
	return bad.length ? bad.slice(0, 4).join("; ") : null;
});

/* The overview again, now that the store holds several windows of the workload. */
await gotoView("overview");
await page.click('#ranges button[data-range="15m"]');
await ready();
await shot("overview-15min");

{
	const light = await launch("light");
	const p = await light.newPage();
	p.on("console", m => { if (m.type() === "error") errors.push("console (light): " + m.text()); });
	p.on("pageerror", e => errors.push("page error (light): " + e.message));
	await p.setViewportSize({width: 1400, height: 900});
	await p.goto(URL);
	await p.waitForSelector("#view[data-state=ready]", {state: "attached", timeout: 20000});
	await p.waitForTimeout(500);
	await p.screenshot({path: path.join(SHOTS, "overview-light.png"), fullPage: true});
	await light.close();
}

await finish();

/* The last check (nothing logged as an error, nothing loaded from elsewhere), then the browser's
 * end; exits with the status of the checks. */
async function finish() {
	await check("no_request_fetches_every_process", async () => {
		const all = apiLog.filter(e => /^api\/v1\/processes(\?(?!.*\bpid=)|$)/.test(e.url));
		return all.length ? all.length + " requests for every process, e.g. " + all[0].url : null;
	});
	await check("no_console_errors", async () => {
		if (external.length) return "requests outside the daemon: " + external.slice(0, 3).join(", ");
		return errors.length ? errors.slice(0, 5).join("; ") : null;
	});
	await ctx.close();
	for (const d of [userDir + "-dark", userDir + "-light", userDir])
		fs.rmSync(d, {recursive: true, force: true});
	process.exit(failed ? 1 : 0);
}

/* The rows of the process view's "Waited behind" table, by column name. */
function behindRows() {
	return page.evaluate(() => {
		const t = document.getElementById("p-behind-holders");
		if (!t) return null;
		const heads = [...t.querySelectorAll("thead th")].map(th => th.textContent);
		return [...t.querySelectorAll("tbody tr")].map(tr => {
			const r = {};
			[...tr.children].forEach((td, i) => { r[heads[i] || "cell" + i] = td.textContent; });
			return r;
		});
	});
}

/* Every chart of the view shown inside its card at 800 and at 1400 px, after a resize and after
 * a fresh load at that width, and no sideways scrolling; a screenshot of each as @name-800/-1400. */
async function fitsAt1400And800(name) {
	for (const [w, h] of [[800, 900], [1400, 1000]]) {
		await page.setViewportSize({width: w, height: h});
		await page.waitForTimeout(500);
		let bad = await chartsOutside();
		if (bad.length) return w + " px, resized: " + bad.slice(0, 3).join("; ");
		await navigate(() => page.reload());
		await page.waitForFunction(() => document.getElementById("view").dataset.state === "ready", null, {timeout: 20000});
		await page.waitForTimeout(500);
		bad = await chartsOutside();
		if (bad.length) return w + " px, loaded: " + bad.slice(0, 3).join("; ");
		const over = await page.evaluate(() => document.documentElement.scrollWidth - innerWidth);
		if (over > 0) return w + " px: the page scrolls sideways by " + over + " px";
		await shot(name + "-" + w);
	}
	return null;
}

/* The view's tables wider than their card: [{id, w, card}]. */
function tablesOutside() {
	return page.evaluate(() => [...document.querySelectorAll("#view table")].map(t => {
		const card = t.closest(".card");
		return {id: t.id || t.className, w: t.scrollWidth, card: card ? card.clientWidth : 0};
	}).filter(x => x.w > x.card));
}

/* The second run (test_browser.sh): mmlockd with the contention collector while holder_workload
 * (pid HOLDER_PID) ran, its fault threads waiting for mmap_lock behind its mprotect thread. */
async function holderChecks() {
	await navigate(() => page.goto(URL));
	await ready();
	const st = await (await fetch(URL + "api/v1/status")).json();
	const c = (st.collectors || []).find(x => x.name === "contention");
	if (!c || c.state !== "running") {
		console.log("# SKIP the holder checks: the contention collector is " + (c ? c.state + " (" + c.reason + ")" : "missing"));
		return;
	}
	let start = null;
	await check("waited_behind_names_the_mprotect_holder", async () => {
		/* Its windows stored, with a wait behind its mprotect thread. */
		const rows = await until("api/v1/locks?" + new URLSearchParams({pid: HOLDER_PID, since: 0, top: 1000}),
			r => r.rows.some(x => x.holder_op === "mprotect" && x.holder_mode === "write") ? r.rows : null, WINDOW_WAIT_MS);
		if (!rows) return "the store has no wait of pid " + HOLDER_PID + " behind an mprotect held for write";
		start = rows[0].start_time;
		await gotoView("process/" + HOLDER_PID + "/" + start.toFixed(3));
		const t = await behindRows();
		console.log("# waited behind: " + JSON.stringify((t || []).slice(0, 4)));
		if (!t) return "the process view has no waited-behind table: " + (await page.textContent("#p-behind")).slice(0, 200);
		const row = t.find(r => r.op === "mprotect" && r.mode === "write");
		if (!row) return "no row of a write holder doing mprotect";
		if (!row.holder.startsWith("holder_workload (" + HOLDER_PID + ")")) return "the mprotect holder reads " + JSON.stringify(row.holder);
		if (!(parseFloat(row.waits.replace(/,/g, "")) > 0) || row["total wait"] === "0") return "its row has no wait: " + JSON.stringify(row);
		const sum = await page.textContent("#p-behind-summary");
		if (!/waits for mmap_lock/.test(sum)) return "the summary reads " + JSON.stringify(sum);
		/* The chart: the wait behind mprotect, non-zero; only operations that waited. */
		const ch = await page.evaluate(() => {
			const u = window.mmlockd.charts["p-behind-ops"];
			return u && u.root.isConnected ? u.series.slice(1).map(s => s.label) : null;
		});
		if (!ch) return "no waited-behind chart";
		if (!ch.includes("mprotect")) return "the chart has no mprotect series: " + ch.join(", ");
		const d = await chartData("p-behind-ops");
		if (!nonzero(d.data[1 + ch.indexOf("mprotect")])) return "its mprotect series is all zero";
		return null;
	});
	await check("waited_behind_chart_fits_its_card_at_1400_and_800", async () => {
		if (start === null) return "no process view to look at";
		return fitsAt1400And800("process-waited-behind");
	});
	await check("locks_view_names_mmap_lock_holders", async () => {
		await gotoView("locks");
		const cells = await page.evaluate(() => {
			const t = document.getElementById("locks");
			const i = [...t.querySelectorAll("thead th")].findIndex(th => th.textContent.startsWith("mmap_lock holder"));
			return i < 0 ? null : [...t.querySelectorAll("tbody tr")].map(tr => tr.children[i].textContent);
		});
		await shot("locks-holders");
		if (!cells) return "no mmap_lock holder column";
		if (!cells.some(x => x.includes("(" + HOLDER_PID + ")") && x.includes("write: mprotect")))
			return "no row names holder_workload's mprotect: " + JSON.stringify(cells.slice(0, 4));
		/* At 800 px too, inside its card, its process and holder columns kept. */
		await page.setViewportSize({width: 800, height: 900});
		await page.waitForTimeout(400);
		const over = await tablesOutside();
		const heads = await page.evaluate(() => [...document.querySelectorAll("#locks thead th")]
			.filter(th => getComputedStyle(th).display !== "none").map(th => th.textContent));
		await shot("locks-holders-800");
		await page.setViewportSize({width: 1400, height: 1000});
		if (over.length) return "at 800 px: " + over.map(o => o.id + " " + o.w + " > " + o.card).join("; ");
		if (!heads.includes("process") || !heads.some(h => h.startsWith("mmap_lock holder")))
			return "at 800 px the columns shown are " + heads.join(", ");
		return null;
	});
}
