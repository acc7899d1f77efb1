#!/usr/bin/env node
// Open a `scope-profiler diff -o PAGE.html` page from file:// in headless Chromium
// (playwright-core) and fail on any console error, page error, failed request or request that
// leaves the file (the page must be self-contained). Checks that the table and the
// differential flame graph are there, sorts the table by a header click, clicks a frame and
// checks that it was zoomed to the full width (its callers stretched, the rest hidden), then
// resets the zoom; prints what it saw.
//   usage: node diff_check.cjs PAGE.html [SCREENSHOT.png]
// playwright-core is looked up in $CLIENTS_NODE_DIR/node_modules; Chromium is $CHROMIUM or
// /usr/lib/chromium/chromium (tests/run_all.sh sets both up).
'use strict'
const path = require('path')
const NODE_DIR = process.env.CLIENTS_NODE_DIR || path.join(__dirname, '..', '..', '.clients')
const { chromium } = require(require.resolve('playwright-core', { paths: [NODE_DIR] }))
const [file, shot] = process.argv.slice(2)
if (!file) { console.error('usage: diff_check.cjs PAGE.html [SCREENSHOT.png]'); process.exit(2) }
const fail = (m) => { console.error('FAIL: ' + m); process.exit(1) }

async function main() {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/lib/chromium/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--no-first-run'],
  })
  const problems = []
  try {
    const page = await (await browser.newContext({ viewport: { width: 1400, height: 900 } })).newPage()
    page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`.slice(0, 300)) })
    page.on('pageerror', (e) => problems.push('page error: ' + String(e)))
    page.on('requestfailed', (r) => problems.push(`request failed: ${r.url().slice(0, 80)} ${r.failure() && r.failure().errorText}`))
    page.on('request', (r) => { const u = r.url(); if (!u.startsWith('file:') && !u.startsWith('data:')) problems.push('network request: ' + u) })
    const url = 'file://' + path.resolve(file)
    const resp = await page.goto(url, { waitUntil: 'load' })
    if (!resp || !resp.ok()) fail('could not load ' + url)
    const rowsOf = () => page.evaluate(() => Array.from(document.querySelectorAll('table.diff tbody tr'))
      .map((r) => r.cells[0].textContent + '=' + r.cells[r.cells.length - 1].textContent.replace(' *', '')))
    const rows = await rowsOf()
    if (rows.length === 0) fail('no table rows')
    const frames = await page.evaluate(() => {
      const count = {}
      document.querySelectorAll('svg.diff-flame g.f').forEach((g) => {
        const v = Array.from(g.classList).find((c) => c.startsWith('v-')) || 'v-?'
        count[v.slice(2)] = (count[v.slice(2)] || 0) + 1
      })
      return count
    })
    if (Object.keys(frames).length === 0) fail('no flame-graph frames')
    if (shot) await page.screenshot({ path: shot, fullPage: true })
    // sort by the change column twice (descending, then ascending): the rows stay the same set
    const th = await page.$('table.diff thead th:nth-child(6)')
    await th.click(); await th.click()
    const sorted = await rowsOf()
    if (sorted.slice().sort().join() !== rows.slice().sort().join()) fail('sorting lost rows')
    const changes = await page.evaluate(() => Array.from(document.querySelectorAll('table.diff tbody tr'))
      .map((r) => parseFloat(r.cells[5].dataset.v)))
    for (let i = 1; i < changes.length; i++) if (changes[i] > changes[i - 1]) fail('not sorted descending by change after two clicks')
    // zoom into the widest slower frame (else the widest frame above the bottom row)
    const target = await page.evaluate(() => {
      const gs = Array.from(document.querySelectorAll('svg.diff-flame g.f')).filter((g) => g.dataset.d !== '0')
      gs.sort((a, b) => (b.classList.contains('v-slower') - a.classList.contains('v-slower')) || (b.dataset.w - a.dataset.w))
      return gs.length ? { name: gs[0].dataset.name, x: gs[0].dataset.x, d: gs[0].dataset.d } : null
    })
    let zoom = 'no frame to zoom'
    if (target) {
      await page.click(`svg.diff-flame g.f[data-x="${target.x}"][data-d="${target.d}"][data-name="${target.name}"] rect`)
      const after = await page.evaluate((t) => {
        const W = parseFloat(document.querySelector('svg.diff-flame').dataset.width)
        const g = document.querySelector(`svg.diff-flame g.f[data-x="${t.x}"][data-d="${t.d}"][data-name="${t.name}"]`)
        const hidden = Array.from(document.querySelectorAll('svg.diff-flame g.f')).filter((x) => x.style.display === 'none').length
        return { width: parseFloat(g.querySelector('rect').getAttribute('width')), W, hidden, reset: document.getElementById('flame-reset').disabled }
      }, target)
      if (Math.abs(after.width - after.W) > 0.5) fail(`clicked frame ${target.name} is ${after.width} px wide after the zoom, not ${after.W}`)
      if (after.reset) fail('reset button still disabled after a zoom')
      await page.click('#flame-reset')
      const back = await page.evaluate(() => Array.from(document.querySelectorAll('svg.diff-flame g.f')).filter((x) => x.style.display === 'none').length)
      if (back !== 0) fail(`${back} frames still hidden after reset`)
      zoom = `zoomed ${target.name} to ${after.width} px (${after.hidden} frames hidden), reset`
    }
    console.log(`file: ${file} -- Chromium ${browser.version()}`)
    console.log(`rows ${rows.join(' ')}`)
    console.log(`frames ${Object.entries(frames).map(([k, v]) => `${k}: ${v}`).join(', ')}`)
    console.log(zoom)
    if (problems.length) fail(problems.join('\n'))
    console.log('OK')
  } finally {
    await browser.close()
  }
}
main().catch((e) => fail(String(e && e.stack || e)))
