// The reference side of the tokenizer tests: the JavaScript GPT-2 encoder (npm gpt-3-encoder).
// Input: one string per line as hex of its bytes (stdin). Bytes become a JavaScript string the
// way Node reads a UTF-8 file (Buffer.toString: each maximal ill-formed subpart becomes U+FFFD).
//   node js_encode.js NODE_MODULES encode < strings.hex > ids.txt
//       the reference's token ids, one line per string
//   node js_encode.js NODE_MODULES split < strings.hex > ends.txt
//       the end offsets of the pieces of the reference's split (its own regex, read from
//       Encoder.js), in bytes of the input: a U+FFFD that stands for an ill-formed subpart
//       counts as that subpart's bytes
//   node js_encode.js NODE_MODULES decode-check IDS < strings.hex
//       the reference decoder turns our ids (file IDS) back into the same JavaScript strings
const fs = require('fs');
const path = require('path');
const [modules, mode, idsPath] = process.argv.slice(2);
const encoderDir = path.resolve(modules, 'gpt-3-encoder');
const { encode, decode } = require(encoderDir);

const lines = fs.readFileSync(0, 'latin1').split('\n');
if (lines[lines.length - 1] === '') lines.pop();
const buffers = lines.map(h => Buffer.from(h, 'hex'));

// Encoder.js's split pattern, taken from its source so that the test follows the reference.
function referencePattern() {
  const source = fs.readFileSync(path.join(encoderDir, 'Encoder.js'), 'utf8');
  const m = source.match(/^const pat = \/(.*)\/([a-z]*)$/m);
  if (!m) throw new Error('cannot find the split pattern in Encoder.js');
  return new RegExp(m[1], m[2]);
}

// Bytes that the decoder turned into the U+FFFD at buf[at]: the longest prefix (1 to 3 bytes)
// that decodes to a single U+FFFD, i.e. the maximal subpart of an ill-formed sequence.
const decoder = new TextDecoder('utf-8');
function replacedBytes(buf, at) {
  if (buf[at] === 0xef && buf[at + 1] === 0xbf && buf[at + 2] === 0xbd) return 3;  // a real U+FFFD
  let n = 1;
  for (let k = 2; k <= 3 && at + k <= buf.length; k++)
    if (decoder.decode(buf.subarray(at, at + k)) === '\ufffd') n = k;
  return n;
}

function pieceEnds(pat, buf) {
  const s = buf.toString('utf8');
  const byteAt = new Array(s.length + 1);  // byte offset of each UTF-16 index
  let b = 0;
  for (let i = 0; i < s.length;) {
    byteAt[i] = b;
    const cp = s.codePointAt(i);
    b += cp === 0xfffd ? replacedBytes(buf, b) : Buffer.byteLength(String.fromCodePoint(cp));
    i += cp > 0xffff ? 2 : 1;
  }
  byteAt[s.length] = b;
  if (b !== buf.length) throw new Error(`byte mapping lost track: ${b} != ${buf.length}`);
  return Array.from(s.matchAll(pat), m => byteAt[m.index + m[0].length]);
}

let out;
if (mode === 'encode') {
  out = buffers.map(buf => encode(buf.toString('utf8')).join(' '));
} else if (mode === 'split') {
  const pat = referencePattern();
  out = buffers.map(buf => pieceEnds(pat, buf).join(' '));
} else if (mode === 'decode-check') {
  const ids = fs.readFileSync(idsPath, 'latin1').split('\n');
  let bad = 0;
  buffers.forEach((buf, i) => {
    const tokens = ids[i] === '' ? [] : ids[i].split(' ').map(Number);
    if (decode(tokens) !== buf.toString('utf8') && bad++ < 5) console.error(`line ${i + 1}: reference decode differs`);
  });
  console.log(`${buffers.length} strings: ${bad} reference decodes differ`);
  process.exit(bad ? 1 : 0);
} else {
  console.error('usage: node js_encode.js NODE_MODULES encode|split|decode-check [IDS] < strings.hex');
  process.exit(2);
}
fs.writeFileSync(1, out.length ? out.join('\n') + '\n' : '');
