// A Node app: an HTTP server on PORT, with nothing but node itself.
const http = require('http');
const port = Number(process.env.PORT);
http.createServer((req, res) => {
  res.writeHead(200, {'content-type': 'text/plain'});
  res.end('hello from node\n');
}).listen(port, '127.0.0.1', () => console.log(`listening on ${port}`));
process.on('SIGTERM', () => process.exit(0));
