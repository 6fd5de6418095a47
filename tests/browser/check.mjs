// Opens a page in Debian's Chromium, headless, driven by Playwright (playwright-core), with
// the network blocked, does what a person would, and prints what it saw as one JSON line.
// The Rust tests (tests/e2e_html.rs) assert on it.
//
//   node check.mjs report FILE.html SCREENSHOT.png HOT_FUNCTION   (- for none)
//   node check.mjs speedscope FILE.speedscope.json SCREENSHOT.png HOT_FUNCTION
//
// CLRPROF_BROWSER_DEPS names the directory whose node_modules has playwright-core and
// speedscope (installed by `cargo xtask setup`); CLRPROF_CHROMIUM the browser.
import { createRequire } from "node:module";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [mode, file, screenshot, hot] = process.argv.slice(2);
const deps = process.env.CLRPROF_BROWSER_DEPS;
const require = createRequire(path.join(deps, "node_modules", "x.js"));
const { chromium } = require("playwright-core");

const profileDir = mkdtempSync(path.join(tmpdir(), "clrprof-chromium-"));
// A fresh profile directory: Playwright passes it as Chromium's --user-data-dir.
const context = await chromium.launchPersistentContext(profileDir, {
  executablePath: process.env.CLRPROF_CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
  ],
  viewport: { width: 1400, height: 900 },
  offline: true,
});
const facts = { errors: [], requests: [] };
try {
  const page = await context.newPage();
  page.on("console", (m) => { if (m.type() === "error") facts.errors.push(m.text()); });
  page.on("pageerror", (e) => facts.errors.push(String(e)));
  // Every request but the page's own file:// loads is refused and recorded.
  const allowed = mode === "report" ? [pathToFileURL(file).href] : null;
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith("file:") && (!allowed || allowed.includes(url))) return route.continue();
    if (url.startsWith("data:") || url.startsWith("blob:")) return route.continue();
    facts.requests.push(url);
    return route.abort();
  });
  if (mode === "report") await report(page);
  else await speedscope(page);
  await page.screenshot({ path: screenshot, fullPage: false });
} catch (e) {
  facts.errors.push("check.mjs: " + (e && e.stack ? e.stack : e));
} finally {
  await context.close();
  rmSync(profileDir, { recursive: true, force: true });
}
console.log(JSON.stringify(facts));

async function report(page) {
  // When the page says it is ready, on the page's own clock (from the start of its navigation):
  // what opening the report costs, without the browser's start of a renderer process, which
  // took seconds when other tests ran browsers and programs at the same time.
  await page.addInitScript(() => {
    new MutationObserver((changes, observer) => {
      if (document.body && document.body.dataset.ready === "1") {
        window.clrprofReadyAt = performance.now();
        observer.disconnect();
      }
    }).observe(document, { attributes: true, subtree: true, attributeFilter: ["data-ready"] });
  });
  const start = Date.now();
  await page.goto(pathToFileURL(file).href);
  await page.waitForSelector("body[data-ready='1']", { timeout: 20000 });
  facts.goto_ms = Date.now() - start;
  facts.load_ms = Math.round(await page.evaluate(() => window.clrprofReadyAt));
  facts.tabs = await page.$$eval("nav button", (b) => b.map((x) => x.textContent));
  facts.metrics = await page.$$eval("#metric option", (o) => o.map((x) => x.textContent));
  if (hot !== "-") await hotFunction(page);
  // The timeline: drawn, with its marks.
  if (facts.tabs.includes("Timeline")) {
    await page.click("nav button:text-is('Timeline')");
    facts.timeline_height = await page.$eval("#timeline", (c) => c.height);
    facts.timeline_marks = await page.evaluate(() => window.clrprofReport.timelineMarks());
    await page.screenshot({ path: screenshot.replace(/\.png$/, "-timeline.png") });
  }
  for (const tab of ["Memory", "Exceptions", "JIT", "Summary"]) {
    if (facts.tabs.includes(tab)) await page.click(`nav button:text-is("${tab}")`);
  }
  facts.memory_headings = await page.$$eval("#tab-memory h2", (h) => h.map((x) => x.textContent));
  await page.click("nav button:text-is('Flame graph')");
  await page.hover("#flame", { position: { x: 200, y: 9 } });
}

async function hotFunction(page) {
  // The hot function: in the functions table, on screen after scrolling to it.
  const cell = page.locator("#functions td.name", { hasText: hot }).first();
  facts.hot_in_table = (await cell.count()) > 0;
  if (!facts.hot_in_table) return;
  // Drawn in the flame graph, wide.
  const rects = await page.evaluate((n) => window.clrprofReport.frameRects(n), hot);
  facts.hot_flame_width = Math.max(0, ...rects.map((r) => r.width));
  // Click it: the flame graph zooms into it.
  const r = rects.sort((a, b) => b.width - a.width)[0];
  await page.mouse.click(r.x + r.width / 2, r.y + r.height / 2);
  facts.zoomed = await page.evaluate(() => window.clrprofReport.zoomed());
  facts.hot_width_after_zoom = Math.max(0, ...(await page.evaluate((n) => window.clrprofReport.frameRects(n), hot)).map((x) => x.width));
  await page.click("#reset");
  facts.zoomed_after_reset = await page.evaluate(() => window.clrprofReport.zoomed());
  // Search: the match line says how much matched.
  await page.fill("#search", hot.split("(")[0]);
  facts.search = await page.textContent("#match");
  await page.fill("#search", "");
  // Sort the functions by total: the first row is then the heaviest by total.
  await page.click("#functions th[data-key='total']");
  facts.sorted_by = await page.$eval("#functions th.sorted", (th) => th.dataset.key);
  const totals = await page.$$eval("#functions tbody tr", (rows) => rows.slice(0, 5).map((r) => r.children[3].textContent));
  facts.top_totals = totals;
}

async function speedscope(page) {
  const app = path.join(deps, "node_modules", "speedscope", "dist", "release", "index.html");
  await page.goto(pathToFileURL(app).href);
  // speedscope's own "Browse" file input.
  await page.setInputFiles("input[type=file]", file);
  await page.waitForSelector("canvas", { timeout: 20000 });
  // The sandwich view lists functions as text.
  await page.keyboard.press("3");
  await page.waitForTimeout(500);
  facts.hot_shown = await page.locator(`text=${hot}`).first().isVisible().catch(() => false);
  facts.title = await page.title();
}
