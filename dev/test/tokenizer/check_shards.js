// Checks token shards against reference token ids: the shards PREFIX_val_*.bin then
// PREFIX_train_*.bin, read in order, must hold exactly <|endoftext|> followed by the ids of each
// non-empty document (one line of IDS per document; an empty document has no line content and
// no tokens), and every shard must have a valid header (magic 20240520, version 1, the token
// count that matches its size). With VAL_DOCS, the validation shards must hold exactly the first
// VAL_DOCS documents (--val-fraction's split).
//   node check_shards.js IDS PREFIX [VAL_DOCS]
const fs = require('fs');
const path = require('path');
const [idsPath, prefix, valDocs] = process.argv.slice(2);
const EOT = 50256;

const expected = [], documentEnds = [];
for (const line of fs.readFileSync(idsPath, 'latin1').split('\n')) {
  if (line === '') continue;
  if (expected.length) documentEnds.push(expected.length);
  expected.push(EOT);
  for (const id of line.split(' ')) expected.push(Number(id));
}

const dir = path.dirname(prefix), base = path.basename(prefix);
const shards = [];
for (const split of ['val', 'train'])
  shards.push(...fs.readdirSync(dir).filter(f => new RegExp(`^${base}_${split}_\\d{6}\\.bin$`).test(f)).sort());
if (shards.length === 0) throw new Error(`no shards ${prefix}_*.bin`);
let at = 0;
for (const name of shards) {
  const buf = fs.readFileSync(path.join(dir, name));
  const magic = buf.readInt32LE(0), version = buf.readInt32LE(4), count = buf.readInt32LE(8);
  if (magic !== 20240520 || version !== 1 || buf.length !== 1024 + 2 * count)
    throw new Error(`${name}: bad header (magic ${magic}, version ${version}, count ${count}, ${buf.length} bytes)`);
  for (let i = 0; i < count; i++, at++) {
    const got = buf.readUInt16LE(1024 + 2 * i);
    if (got !== expected[at]) throw new Error(`${name}: token ${i} (stream position ${at}) is ${got}, reference ${expected[at]}`);
  }
}
if (at !== expected.length) throw new Error(`the shards hold ${at} tokens, the reference ${expected.length}`);
documentEnds.push(expected.length);
if (valDocs !== undefined) {
  const want = Number(valDocs) === 0 ? 0 : documentEnds[Number(valDocs) - 1];
  let got = 0;
  for (const name of shards.filter(n => n.startsWith(`${base}_val_`)))
    got += fs.readFileSync(path.join(dir, name)).readInt32LE(8);
  if (got !== want) throw new Error(`the validation shards hold ${got} tokens, the first ${valDocs} documents ${want}`);
}
console.log(`${shards.length} shards, ${at} tokens: equal to the reference` +
            (valDocs !== undefined ? `, the first ${valDocs} documents validation` : ''));
