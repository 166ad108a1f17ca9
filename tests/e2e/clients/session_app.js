// An express app with express-session and its PostgreSQL store connect-pg-simple, configured as
// its README says, except that the store's own pruning is off: jsonb_ttl's TTL index on the
// session table's expire column does that. Driven over HTTP by this same script:
//   node session_app.js login PREFIX COUNT MAX_AGE_MS COOKIES.json   log COUNT users in
//   node session_app.js check COOKIES.json                           who each cookie is now
// DATABASE_URL names the database.
const fs = require('fs');
const express = require('express');
const session = require('express-session');
const PgStore = require('connect-pg-simple')(session);

const store = new PgStore({
  conString: process.env.DATABASE_URL,
  createTableIfMissing: true,
  pruneSessionInterval: false,
});
const app = express();
app.use(session({
  store,
  secret: 'jsonb_ttl e2e',
  resave: false,
  saveUninitialized: false,
  cookie: { maxAge: 3600 * 1000 },
}));
app.get('/login', (req, res) => {
  req.session.user = req.query.user;
  req.session.cookie.maxAge = Number(req.query.maxAge);
  res.send('welcome ' + req.query.user);
});
app.get('/me', (req, res) => res.send(req.session.user || 'anonymous'));

async function main() {
  const server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const base = `http://127.0.0.1:${server.address().port}`;
  const [mode, ...args] = process.argv.slice(2);
  try {
    if (mode === 'login') {
      const [prefix, count, maxAge, file] = args;
      const cookies = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file)) : {};
      for (let i = 0; i < Number(count); i++) {
        const user = `${prefix}${i}`;
        const res = await fetch(`${base}/login?user=${user}&maxAge=${maxAge}`);
        // the whole response: express-session saves the session before it ends the response
        const body = await res.text();
        if (res.status !== 200) throw new Error(`login ${user}: HTTP ${res.status} ${body}`);
        cookies[user] = res.headers.get('set-cookie').split(';')[0];
      }
      fs.writeFileSync(file, JSON.stringify(cookies));
    } else if (mode === 'check') {
      const cookies = JSON.parse(fs.readFileSync(args[0]));
      for (const [user, cookie] of Object.entries(cookies)) {
        const res = await fetch(`${base}/me`, { headers: { cookie } });
        console.log(`${user}:${await res.text()}`);
      }
    } else {
      throw new Error(`unknown mode ${mode}`);
    }
  } finally {
    server.close();
    await store.close();
  }
}
main().catch((e) => { console.error(e); process.exit(1); });
