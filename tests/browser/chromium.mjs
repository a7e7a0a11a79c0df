// chromium.mjs: what the page runs that are not page.test.mjs share (day.test.mjs here,
// bench/soak_page.mjs): Debian's chromium started headless through playwright-core, never a
// downloaded browser, on a profile of its own, and a page whose errors go to one callback.
import fs from "fs";
import os from "os";
import path from "path";

/* A headless Chromium context at 1400x1000 on a temporary profile (@prefix names its directory)
 * and its first page. @report(text) gets every console error, page error and failed request,
 * but for requests aborted while @navigating() says the caller itself is navigating (its
 * navigation, not the daemon, ended them). Returns {ctx, page, close}. */
export async function openPage(chromium, executablePath, prefix, report, navigating) {
	const userDir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
	const ctx = await chromium.launchPersistentContext(userDir, {
		executablePath, headless: true, viewport: {width: 1400, height: 1000},
		/* The caller's SIGTERM handler closes it (and removes the profile); playwright's
		 * own would end the process first. */
		handleSIGTERM: false,
		args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
			"--disable-background-networking", "--disable-component-update",
			"--disable-sync", "--disable-quic"],
	});
	const page = await ctx.newPage();
	page.on("console", m => { if (m.type() === "error") report("console: " + m.text()); });
	page.on("pageerror", e => report("page error: " + e.message));
	page.on("requestfailed", r => {
		const why = (r.failure() || {}).errorText || "no reason";
		if (!(navigating() && why === "net::ERR_ABORTED"))
			report("request failed: " + r.url() + " (" + why + ")");
	});
	/* Chromium may still write its profile as it exits: retried, and never fatal. */
	const close = async () => {
		await ctx.close().catch(() => {});
		try {
			fs.rmSync(userDir, {recursive: true, force: true, maxRetries: 10, retryDelay: 200});
		} catch (e) {
			report("profile " + userDir + " not removed: " + e.message);
		}
	};
	return {ctx, page, close};
}

/* Opens @url (a view's #hash) and waits until view @view is ready or failed, at most
 * @timeoutMs; returns its state ("ready" or "error"). */
export async function openView(page, url, view, timeoutMs) {
	await page.goto(url);
	await page.waitForFunction(v => {
		const e = document.getElementById("view");
		return e.dataset.view === v && ["ready", "error"].includes(e.dataset.state);
	}, view, {timeout: timeoutMs});
	return page.evaluate(() => document.getElementById("view").dataset.state);
}
