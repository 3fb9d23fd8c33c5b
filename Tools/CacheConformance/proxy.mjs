// The Node half of the harness: an HTTP front for the cache-tests client. /test/* goes through the Swift driver
// (Courier with a ResponseCache, as a private cache in front of the origin); /config/* and /state/* go straight to
// the origin. Node's own modules only.
//
// Usage: ORIGIN=http://localhost:8000 DRIVER=path/to/CacheConformanceDriver PORT=8001 node proxy.mjs
import http from 'http'
import { spawn } from 'child_process'
import readline from 'readline'

const origin = process.env.ORIGIN || 'http://localhost:8000'
const port = parseInt(process.env.PORT || '8001')
const driver = spawn(process.env.DRIVER, [], { stdio: ['pipe', 'pipe', 'inherit'] })
const pending = new Map()
let nextId = 1
const dropped = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'content-encoding'])

readline.createInterface({ input: driver.stdout }).on('line', line => {
  const answer = JSON.parse(line)
  const respond = pending.get(answer.id)
  pending.delete(answer.id)
  if (respond) respond(answer)
})

http.createServer((req, res) => {
  const chunks = []
  req.on('data', chunk => chunks.push(chunk))
  req.on('end', () => {
    const body = Buffer.concat(chunks)
    if (!req.url.startsWith('/test/')) {
      const upstream = http.request(origin + req.url, { method: req.method, headers: req.headers }, answer => {
        res.writeHead(answer.statusCode, answer.headers)
        answer.pipe(res)
      })
      upstream.on('error', error => { res.writeHead(502); res.end(String(error)) })
      upstream.end(body)
      return
    }
    const id = nextId++
    pending.set(id, answer => {
      for (const [name, value] of answer.headers) {
        if (!dropped.has(name.toLowerCase())) res.setHeader(name, value)
      }
      res.setHeader('X-Courier-Cache', answer.cacheStatus)
      const bytes = Buffer.from(answer.body, 'base64')
      const length = answer.headers.find(([name]) => name.toLowerCase() === 'content-length')
      if (req.method === 'HEAD') {
        if (length) res.setHeader('Content-Length', length[1])
      } else if (![204, 304].includes(answer.status) && answer.status >= 200) {
        res.setHeader('Content-Length', bytes.length)
      }
      res.writeHead(answer.status)
      res.end(req.method === 'HEAD' ? undefined : bytes)
    })
    const headers = []
    for (let i = 0; i < req.rawHeaders.length; i += 2) headers.push([req.rawHeaders[i], req.rawHeaders[i + 1]])
    driver.stdin.write(JSON.stringify({
      id, method: req.method, url: origin + req.url, headers, body: body.length ? body.toString('base64') : null
    }) + '\n')
  })
}).listen(port, '127.0.0.1', () => console.error(`proxy on http://127.0.0.1:${port}, origin ${origin}`))
