// day.test.mjs: mmlockd's page on a day of history of a busy host (tests/tools/gen_day.c, 8 640
// windows, ~57 000 processes, 50 units), in headless Chromium (Debian's /usr/bin/chromium driven by
// playwright-core), run by test_browser_day.sh against a daemon serving that day. For the 24 h and
// 7 d ranges, every view that reads the range (overview, processes, the busiest process, units, the
// busiest unit, lock contention, compare) is opened from its URL and must end ready within
// VIEW_TIMEOUT_MS with no error banner, its charts drawn (points, a non-zero one among them) and
// its tables filled (a row with cells; the process's holders table may be empty). Each check
// prints "ok NAME" or "FAIL NAME: why", and the time each view took to be ready is printed as a
// "#" line; a screenshot of each goes to $SHOTS. On a short generated day (gen_day --hours 0.1,
// DAY_DB=) every check passes.
// Then no_console_errors: nothing logged as an error, no page error, no failed request.
// Usage: node day.test.mjs PATH/TO/playwright-core/index.mjs (environment: URL, SHOTS, CHROMIUM).
import path from "path";

import {openPage, openView} from "./chromium.mjs";

const {chromium} = await import(process.argv[2]);
const {URL, SHOTS, CHROMIUM} = process.env;
const VIEW_TIMEOUT_MS = 60000;
const RANGES = ["24h", "7d"];

let failed = 0;
const report = (name, why) => {
	if (why) {
		failed++;
		console.log("FAIL " + name + ": " + why);
	} else {
		console.log("ok " + name);
	}
};

const errors = [];
let navigating = 0;
const {page, close} = await openPage(chromium, CHROMIUM, "mmlockd-chromium-day-",
	e => errors.push(e), () => navigating);

/* Opens #@hash?range=@range and waits until the view is ready or failed; returns its seconds. */
async function open(hash, range) {
	const t = Date.now();
	navigating++;
	try {
		await openView(page, URL + "#" + hash + "?range=" + range, hash.split("/")[0],
			VIEW_TIMEOUT_MS);
	} finally {
		navigating--;
	}
	return (Date.now() - t) / 1000;
}

/* What the shown view lacks: "" when it has no error banner, at least @minCharts charts each with
 * points and one of them a value > 0 (a chart of lost samples may well be flat), at least
 * @minTables tables, each with a row of cells unless @mayBeEmpty (a process's holders table is
 * empty when it never waited). */
const lacks = (minCharts, minTables, mayBeEmpty) => page.evaluate(([mc, mt, empty]) => {
	const v = document.getElementById("view"), why = [];
	if (v.dataset.state !== "ready") why.push("state " + v.dataset.state);
	const bad = [...document.querySelectorAll(".banner.bad")].filter(b => !b.hidden && b.textContent);
	for (const b of bad) why.push("banner: " + b.textContent.slice(0, 160));
	const charts = Object.entries(window.mmlockd.charts).filter(([, u]) => u.root.isConnected);
	if (charts.length < mc) why.push(charts.length + " charts drawn, " + mc + " expected");
	for (const [id, u] of charts)
		if (!u.data[0] || !u.data[0].length) why.push("chart " + id + " has no point");
	const positive = ([, u]) => u.data.slice(1).some(s => s.some(y => y !== null && y > 0));
	if (charts.length && !charts.some(positive)) why.push("no chart has a non-zero point");
	const tables = [...v.querySelectorAll("table")];
	if (tables.length < mt) why.push(tables.length + " tables, " + mt + " expected");
	for (const t of empty ? [] : tables)
		if (![...t.querySelectorAll("tbody tr")].some(r => r.cells.length > 1))
			why.push("table " + (t.id || "?") + " is empty");
	return why.join("; ");
}, [minCharts, minTables, mayBeEmpty]);

/* The busiest process and unit of the range, from the API as the page reads it. */
async function busiest(range) {
	const until = Date.now() / 1000, since = until - {"24h": 86400, "7d": 7 * 86400}[range];
	const q = by => URL + "api/v1/top?since=" + since.toFixed(3) + "&until=" + until.toFixed(3) +
		"&limit=1&fields=minflt" + (by ? "&by=" + by : "");
	const [p, u] = await Promise.all([fetch(q()), fetch(q("cgroup"))]);
	if (!p.ok || !u.ok) return null;
	return {proc: (await p.json()).rows[0], unit: (await u.json()).rows[0]};
}

async function views(range) {
	const b = await busiest(range);
	const list = [["overview", 1, 2], ["processes", 0, 1], ["units", 0, 1], ["locks", 0, 1],
		["compare", 2, 1]];
	if (b && b.proc)
		list.push(["process/" + b.proc.pid + "/" + b.proc.start_time.toFixed(3), 1, 0, true]);
	if (b && b.unit)
		list.push(["unit/" + encodeURIComponent(b.unit.cgroup), 1, 1]);
	else
		report("range_" + range + "_busiest_process_and_unit_known", "/api/v1/top failed");
	return list;
}

for (const range of RANGES) {
	for (const [hash, minCharts, minTables, mayBeEmpty] of await views(range)) {
		const name = "range_" + range + "_" + hash.split("/")[0] + "_view_drawn_and_filled";
		try {
			const secs = await open(hash, range);
			console.log("# " + range + " " + hash + ": ready in " + secs.toFixed(1) + " s");
			report(name, await lacks(minCharts, minTables, !!mayBeEmpty));
			await page.screenshot({path: path.join(SHOTS, "day-" + range + "-" +
				hash.split("/")[0] + ".png"), fullPage: true});
		} catch (e) {
			report(name, e.message.split("\n")[0]);
		}
	}
}
report("no_console_errors", errors.length ? errors.slice(0, 5).join("; ") : "");
await close();
process.exit(failed ? 1 : 0);
