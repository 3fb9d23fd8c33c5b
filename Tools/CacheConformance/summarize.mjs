// Pass rates of a cache-tests results file by test kind, next to the published browser results.
// Usage: node summarize.mjs CACHE_TESTS_DIR results.json [excluded-id-prefix ...]
import fs from 'fs'
import path from 'path'

const [dir, resultsFile, ...excluded] = process.argv.slice(2)
const { default: suites } = await import(path.resolve(dir, 'tests/index.mjs'))
const ours = JSON.parse(fs.readFileSync(resultsFile, 'utf8'))
const engines = { courier: ours }
for (const name of ['chrome', 'firefox', 'safari']) {
  engines[name] = JSON.parse(fs.readFileSync(path.resolve(dir, `results/${name}.json`), 'utf8'))
}
const tests = suites.flatMap(suite => suite.tests)
  .filter(test => !test.cdn_only && !test.browser_only && !test.browser_skip)
  .filter(test => !excluded.some(prefix => test.id.startsWith(prefix)))
const kinds = ['required', 'optimal', 'check']
console.log(`Tests: ${tests.length} of the private-cache subset (cdn_only, browser_only and browser_skip left out, as for browsers${excluded.length ? `; excluded: ${excluded.join(', ')}` : ''})`)
console.log('| engine | ' + kinds.map(k => `${k} pass`).join(' | ') + ' |')
console.log('|---|' + kinds.map(() => '---:').join('|') + '|')
for (const [name, results] of Object.entries(engines)) {
  const cells = kinds.map(kind => {
    const ofKind = tests.filter(test => (test.kind || 'required') === kind && test.id in results)
    const passed = ofKind.filter(test => results[test.id] === true).length
    return `${passed}/${ofKind.length} (${ofKind.length ? (100 * passed / ofKind.length).toFixed(1) : '-'}%)`
  })
  console.log(`| ${name} | ${cells.join(' | ')} |`)
}
const failedRequired = tests.filter(test => (test.kind || 'required') === 'required' && test.id in ours && ours[test.id] !== true)
console.log(`\nRequired tests Courier fails (${failedRequired.length}):`)
for (const test of failedRequired) console.log(`- ${test.id}: ${JSON.stringify(ours[test.id])}`)
