#!/usr/bin/env node
// Open a scope-profiler HTML report from file:// in headless Chromium (playwright-core) and
// fail on any console error, page error, failed request or request that leaves the file
// (the report must be self-contained). Checks that the tables, the inline timeline and the
// flame graph (inferno's script running in its iframe) are there, clicks a table header and
// a flame-graph frame (still no error), and prints what it saw.
//   usage: node html_report_check.cjs REPORT.html [SCREENSHOT.png]
// playwright-core is looked up in $CLIENTS_NODE_DIR/node_modules; Chromium is $CHROMIUM
// (tests/run_all.sh sets both up).
'use strict'
const path = require('path')
const NODE_DIR = process.env.CLIENTS_NODE_DIR || path.join(__dirname, '..', '..', '.clients')
const { chromium } = require(require.resolve('playwright-core', { paths: [NODE_DIR] }))
const [file, shot] = process.argv.slice(2)
if (!file) { console.error('usage: html_report_check.cjs REPORT.html [SCREENSHOT.png]'); process.exit(2) }
const fail = (m) => { console.error('FAIL: ' + m); process.exit(1) }
if (!process.env.CHROMIUM) { console.error('CHROMIUM is not set: the Chromium executable to run'); process.exit(2) }

async function main() {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--no-first-run'],
  })
  const problems = []
  try {
    const page = await (await browser.newContext({ viewport: { width: 1400, height: 900 } })).newPage()
    page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()} (${(m.location() || {}).url || ''}`.slice(0, 300) + ')') })
    page.on('pageerror', (e) => problems.push('page error: ' + String(e)))
    page.on('requestfailed', (r) => problems.push(`request failed: ${r.url().slice(0, 80)} ${r.failure() && r.failure().errorText}`))
    page.on('request', (r) => { const u = r.url(); if (!u.startsWith('file:') && !u.startsWith('data:')) problems.push('network request: ' + u) })
    const url = 'file://' + path.resolve(file)
    const resp = await page.goto(url, { waitUntil: 'load' })
    if (!resp || !resp.ok()) fail('could not load ' + url)
    const info = await page.evaluate(() => ({
      title: document.title,
      tables: Array.from(document.querySelectorAll('table')).map((t) => `${t.className}:${t.tBodies[0] ? t.tBodies[0].rows.length : 0}`),
      timelineLanes: document.querySelectorAll('.timeline svg g.lane').length,
      regions: Array.from(document.querySelectorAll('table.regions tbody tr')).map((r) => r.cells[0].textContent + '=' + r.cells[1].textContent),
    }))
    const frame = page.frames().find((f) => f !== page.mainFrame())
    if (!frame) fail('no flame graph frame')
    await frame.waitForLoadState('load')
    const fg = await frame.evaluate(() => ({
      init: typeof init === 'function',
      frames: document.querySelectorAll('#frames > g').length,
      details: !!document.getElementById('details'),
    }))
    if (!fg.init || !fg.details || fg.frames === 0) fail('flame graph script did not run: ' + JSON.stringify(fg))
    // a cross-origin (data:) frame outside the viewport is left unpainted in a full-page
    // screenshot: make the viewport as tall as the page instead
    if (shot) {
      const h = await page.evaluate(() => document.documentElement.scrollHeight)
      await page.setViewportSize({ width: 1400, height: Math.min(h, 16000) })
      await page.waitForTimeout(500)
    }
    if (shot) await page.screenshot({ path: shot })
    // interactions: sort a table, zoom into a flame-graph frame
    const th = await page.$('table.regions thead th:nth-child(3)')
    if (th) { await th.click(); await th.click() }
    const g = await frame.$('#frames > g:nth-child(2)')
    if (g) await g.click()
    await page.waitForTimeout(200)
    console.log(`file: ${file} -- Chromium ${browser.version()}: title ${JSON.stringify(info.title)}`)
    console.log(`tables ${info.tables.join(' ')}`)
    console.log(`timeline lanes ${info.timelineLanes}; flame graph frames ${fg.frames}`)
    console.log(`regions ${info.regions.join(' ')}`)
    if (problems.length) fail(problems.join('\n'))
    console.log('OK')
  } finally {
    await browser.close()
  }
}
main().catch((e) => fail(String(e && e.stack || e)))
