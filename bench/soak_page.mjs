// soak_page.mjs: mmlockd's page left open in headless Chromium for bench/soak.py, as an operator
// leaves it on a screen: the page polls /api/v1/status and /api/v1/processes every 2 s and fetches
// its range again at every closed window by itself; every VIEW_MS this script moves to the next
// view of VIEWS (last hour), so every range route is read all along. It prints one line per event,
// for soak.py to count per minute:
//   view NAME SECONDS        a view became ready after SECONDS
//   error TEXT               a view failed, a console error, a page error or a failed request
// Usage: node soak_page.mjs PATH/TO/playwright-core/index.mjs (environment: URL, CHROMIUM).
// Runs until SIGTERM.
import {openPage, openView} from "../tests/browser/chromium.mjs";

const {chromium} = await import(process.argv[2]);
const {URL, CHROMIUM} = process.env;
const VIEW_MS = 60000;
const VIEWS = ["overview", "processes", "units", "locks", "compare"];

const say = line => console.log(line.replace(/\s+/g, " ").slice(0, 400));
let navigating = 0, stopping = false;
const {page, close} = await openPage(chromium, CHROMIUM, "mmlockd-soak-chromium-",
	e => say("error " + e), () => navigating);
process.on("SIGTERM", async () => {
	stopping = true;
	await close();
	process.exit(0);
});

for (let i = 0; !stopping; i++) {
	const view = VIEWS[i % VIEWS.length], t = Date.now();
	navigating++;
	try {
		const state = await openView(page, URL + "#" + view + "?range=1h", view, VIEW_MS);
		if (state === "ready")
			say("view " + view + " " + ((Date.now() - t) / 1000).toFixed(2));
		else
			say("error view " + view + ": " + await page.evaluate(() =>
				document.getElementById("view").textContent));
	} catch (e) {
		if (!stopping)
			say("error view " + view + ": " + e.message.split("\n")[0]);
	} finally {
		navigating--;
	}
	/* Rejected once SIGTERM's handler closed the browser: the loop ends, the handler exits. */
	await page.waitForTimeout(Math.max(1000, VIEW_MS - (Date.now() - t))).catch(() => {});
}
