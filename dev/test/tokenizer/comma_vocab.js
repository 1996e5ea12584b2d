// A small synthetic GPT-2 vocabulary over the characters '"', ',' and 'a', for the one quirk of
// the reference that GPT-2's own merges barely reach: Encoder.js ranks a pair by the string
// "first,second", so pairs that differ only in where a comma falls share a rank (the later merge
// in vocab.bpe wins), and among pairs of equal lowest rank it merges the last one in the word.
//   node comma_vocab.js NODE_MODULES OUT_DIR > strings.hex
// writes OUT_DIR/gpt-3-encoder/{Encoder.js,index.js,encoder.json,vocab.bpe} (the reference's code
// on this vocabulary) and prints test strings over the three characters as hex lines.
const fs = require('fs');
const path = require('path');
const [modules, outDir] = process.argv.slice(2);

let state = 0x1b873593;  // xorshift32: the same vocabulary and strings on every run
function random(n) {
  state ^= state << 13; state >>>= 0;
  state ^= state >>> 17;
  state ^= state << 5; state >>>= 0;
  return state % n;
}

// GPT-2's printable stand-ins for the 256 bytes (Encoder.js's bytes_to_unicode).
const byteChar = [];
let extra = 0;
for (let b = 0; b < 256; b++) {
  const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
  byteChar[b] = String.fromCharCode(printable ? b : 256 + extra++);
}
const tokens = byteChar.slice();  // the 256 bytes first, as in GPT-2
const isToken = new Set(tokens);

// Encoder.js would emit an undefined id if a pair ranked through another split of its key
// joined into a string that is no token; the C loader refuses such files, so avoid them.
function consistent(merges) {
  for (const [x, y] of merges) {
    const key = x + ',' + y;
    for (let c = 1; c < key.length - 1; c++) {
      if (key[c] !== ',') continue;
      const a = key.slice(0, c), b = key.slice(c + 1);
      if (isToken.has(a) && isToken.has(b) && !isToken.has(a + b)) return false;
    }
  }
  return true;
}

// Random merges of symbols made of '"' and ',' (the letter stays a byte).
const alphabet = ['"', ',', 'a'];
const merges = [];
for (let tries = 0; merges.length < 60 && tries < 5000; tries++) {
  const pool = alphabet.slice(0, 2).concat(tokens.slice(256));
  const x = pool[random(pool.length)], y = pool[random(pool.length)];
  if (x.length + y.length > 6) continue;
  const product = x + y, fresh = !isToken.has(product);
  merges.push([x, y]);
  if (fresh) { tokens.push(product); isToken.add(product); }
  if (!consistent(merges)) {
    merges.pop();
    if (fresh) { tokens.pop(); isToken.delete(product); }
  }
}
tokens.push('<|endoftext|>');

const dir = path.join(outDir, 'gpt-3-encoder');
fs.mkdirSync(dir, { recursive: true });
for (const f of ['Encoder.js', 'index.js']) fs.copyFileSync(path.join(modules, 'gpt-3-encoder', f), path.join(dir, f));
fs.writeFileSync(path.join(dir, 'encoder.json'), JSON.stringify(Object.fromEntries(tokens.map((t, i) => [t, i]))));
fs.writeFileSync(path.join(dir, 'vocab.bpe'), '#version: synthetic\n' + merges.map(m => m.join(' ')).join('\n') + '\n');

const lines = [];
for (let i = 0; i < 3000; i++) {
  let s = '';
  for (let n = 2 + random(10); n > 0; n--) s += alphabet[random(2)];  // '"' and ',': one piece
  if (i % 3 === 0) s = 'a' + s + ' a' + alphabet[random(3)].repeat(1 + random(5));
  lines.push(Buffer.from(s).toString('hex'));
}
process.stdout.write(lines.join('\n') + '\n');
