// An HTTP proxy on 127.0.0.1 in front of the live server that can lose an answer or refuse a request once,
// and records every request it saw (method, path, Idempotency-Key), to test the client's retries.
import { createServer, request } from "node:http";

/**
 * `rules`: a list of `{ match(method, path), action: "lose" | "busy", retryAfter?, times? }`. A matching
 * request is, `times` times (default 1): "lose": forwarded, and once the server has answered, the
 * connection is cut before the answer reaches the client; "busy": answered 503 `database_unavailable`
 * with the given `Retry-After` without reaching the server.
 */
export async function startProxy(target, rules = []) {
  const upstream = new URL(target);
  const seen = [];
  const left = rules.map((rule) => rule.times ?? 1);
  const server = createServer((req, res) => {
    const path = req.url ?? "/";
    seen.push({ method: req.method, path, key: req.headers["idempotency-key"] ?? null, at: Date.now() });
    const index = rules.findIndex((rule, i) => left[i] > 0 && rule.match(req.method, path));
    const rule = index >= 0 ? rules[index] : null;
    if (rule) left[index] -= 1;
    if (rule?.action === "busy") {
      req.resume();
      const body = JSON.stringify({ error: { code: "database_unavailable", message: "busy (proxy)", field: null } });
      res.writeHead(503, { "content-type": "application/json", "retry-after": String(rule.retryAfter ?? 0) });
      res.end(body);
      return;
    }
    const forward = request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path, headers: req.headers },
      (answer) => {
        const chunks = [];
        answer.on("data", (chunk) => chunks.push(chunk));
        answer.on("end", () => {
          if (rule?.action === "lose") {
            req.socket.destroy(); // the server answered; the client never hears it
            return;
          }
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          res.end(Buffer.concat(chunks));
        });
      },
    );
    forward.on("error", () => req.socket.destroy());
    req.pipe(forward);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
