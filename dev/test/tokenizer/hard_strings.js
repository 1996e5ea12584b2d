// Hard strings for the tokenizer tests, written as hex lines of their bytes:
//   node hard_strings.js valid   well-formed UTF-8: the encoders must agree token for token
//   node hard_strings.js invalid ill-formed UTF-8: the splits must agree and decode(encode(x)) == x
// The cases are what a GPT-2 encoder tends to get wrong: contractions (and what merely looks like
// one), runs of spaces and newlines and where they end, the Unicode classes (JavaScript's \s,
// letters and numbers beyond ASCII), emoji and other astral characters, combining marks, merges
// whose symbols contain a comma (Encoder.js ranks pairs by the string "first,second"), very
// long words, and every kind of ill-formed UTF-8.
const mode = process.argv[2];

// A seeded generator (xorshift32), so that the "random" cases are the same on every run.
let state = 0x2545f491;
function random(n) {
  state ^= state << 13; state >>>= 0;
  state ^= state >>> 17;
  state ^= state << 5; state >>>= 0;
  return state % n;
}
function randomWord(alphabet, length) {
  let s = '';
  for (let i = 0; i < length; i++) s += alphabet[random(alphabet.length)];
  return s;
}

const valid = [
  // contractions, and what the pattern's 's|'t|'re|'ve|'m|'ll|'d must not take
  "I'm sure they're here, we've seen it, he'll come, she'd know, it's fine, don't.",
  "I'M SURE THEY'RE HERE, DON'T", "’s curly ’t apostrophes", "''s", "'sss", "x's'", " 's", "'S", "'",
  "rock'n'roll o'clock y'all 'tis 'twas", "ma'am's", "'ll've'd're",
  // spaces, tabs and newlines: \s+(?!\S) leaves the last space to the next word
  'a  b', 'a   b', '   ', ' ', '', '\n', '\n\n\n', 'a \n b', ' \t\n ', 'hello   ', '   hello', 'line\r\nline\r\n',
  'a\tb\t\tc', '  \n  \n', 'end \n', 'x\u00a0y', 'x\u00a0\u00a0y', '\u3000full\u3000width', 'sep\u2028arator\u2029',
  '\ufeffbom', 'nel\u0085next', 'mongolian\u180evowel', 'zero\u200bwidth', 'thin\u2009space', 'ogham\u1680mark',
  '\u000b\u000cvt ff', ' \u00a0 ', '\u2003\u2003em',
  // numbers
  '123456789', '3.14159', '1,000,000', ' 42', 'x2y', 'abc123def', '2024-05-20', '٣٤٥ arabic-indic', '½ ¼ Ⅻ ⅻ',
  '①②③', '१२३', '𝟘𝟙𝟚 math digits', '0x1F600', '1e-10', '+1 (555) 010-0199',
  // emoji and other astral characters
  '😀', '👍🏽', '👨‍👩‍👧‍👦', '🇫🇷🇯🇵', 'hello😀world', ' 😀😀 😀', '𝕳𝖊𝖑𝖑𝖔', '𐍈 gothic', '🀄 mahjong',
  // CJK and other scripts
  '中文字符测试', '日本語のテキスト、カタカナ。', '한국어 텍스트', 'مرحبا بالعالم', 'שָׁלוֹם', 'Привет, мир!',
  'Ελληνικά', 'नमस्ते दुनिया', 'ภาษาไทย', 'ქართული', 'Ꭰ cherokee',
  // combining marks (\p{M} is neither letter nor number)
  'e\u0301', 'cafe\u0301 café', 'Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǫ̗̻̓', 'a\u0308\u0301\u0323', '\u0301lone mark', ' \u0301',
  // <|endoftext|> in text is text
  '<|endoftext|>', 'hello<|endoftext|>world', ' <|endoftext|> ',
  // punctuation and symbols
  '!!!???...', ' ---', '$$$', '#@!%^&*()', '...\n...', 'a...b', '—–-', '«»“”„', '©®™', '€£¥¢', '°±×÷',
  // merges with a comma in a symbol
  '"","",""', '",",",', ',,,,', "',','", '",\\"', '", "', '.",', ',"', '","', '", ",', ',",",",,"',
  // code and markup
  'def f(x):\n    return x**2\n', 'if (a != b) { c += 1; }\n\t\treturn;', '<div class="a">b</div>',
  'https://example.com/a?b=c&d=e#f', '{"key": [1, 2.5, null]}', '    indented\n        more',
  // control characters and the Latin-1 range
  '\u0000', 'nul\u0000inside', '\u0001\u001b[31mred\u001b[0m', '\u007f', 'ÿþýü ¡¢£ ¬­®', 'ſ ß ẞ ﬁ', '\u00ad soft hyphen',
  // very long words and runs (the reference's BPE is cubic in the word length: a few thousand)
  'x'.repeat(2000), 'ab'.repeat(1000), randomWord('abcdefghijklmnopqrstuvwxyz', 3000),
  ' ' + randomWord('etaoinshrdlu', 2500), '1'.repeat(3000), ' '.repeat(5000), '\n'.repeat(3000),
  ' \n'.repeat(1000), '!'.repeat(3000), '😀'.repeat(500), '中'.repeat(1000), 'é'.repeat(1500),
  ('pneumonoultramicroscopicsilicovolcanoconiosis ').repeat(20),
];

// Random well-formed text over a mixed alphabet: letters, digits, spaces, marks, astral.
const alphabet = Array.from("aAzZ09 \n\t'sltdmvr.,!?-\"é中😀\u0301\u00a0\u3000ß٣€");
for (let i = 0; i < 200; i++) valid.push(randomWord(alphabet, 1 + random(80)));

const hex = s => Buffer.from(s, 'utf8').toString('hex');
const bytes = (...parts) => Buffer.concat(parts.map(p => typeof p === 'string' ? Buffer.from(p, 'utf8') : Buffer.from(p)));

const invalid = [
  bytes([0x80]), bytes([0xbf]), bytes('abc', [0x80], 'def'), bytes([0x80, 0x80, 0x80]),
  bytes([0xc0, 0xaf]), bytes([0xe0, 0x80, 0xaf]), bytes([0xf0, 0x80, 0x80, 0xaf]), bytes([0xc1, 0xbf]),  // overlongs
  bytes([0xed, 0xa0, 0x80]), bytes([0xed, 0xbf, 0xbf]), bytes('x', [0xed, 0xa0, 0x80, 0xed, 0xb0, 0x80], 'y'),  // surrogates
  bytes([0xf4, 0x90, 0x80, 0x80]), bytes([0xf5]), bytes([0xf8, 0x88, 0x80, 0x80, 0x80]), bytes([0xfe, 0xff]),  // beyond U+10FFFF
  bytes([0xe2, 0x82]), bytes('price ', [0xe2, 0x82]), bytes([0xe2, 0x82], 'A'), bytes([0xf0, 0x9f, 0x98]),  // truncated
  bytes([0xf0, 0x9f, 0x98], ' ok'), bytes([0xf0, 0x9f, 0x98, 0xef, 0xbf, 0xbd]), bytes('caf', [0xc3]), bytes([0xc3, 0xa9, 0xa9]),
  bytes('hel', [0xff], 'lo'), bytes(' ', [0x80]), bytes([0x80], ' '), bytes("x's", [0x80]), bytes("'", [0x80], 's'),
  bytes('12', [0x80], '34'), bytes('a ', [0x80], ' b'), bytes('  ', [0x80]), bytes([0x80], '\n\n'), bytes('\u00a0', [0xa0]),
  bytes([0xc2], '\u00a0'), bytes('😀', [0x9f, 0x98, 0x80]), bytes([0xe4, 0xb8], '中'), bytes('"', [0x2c, 0xff], '"'),
  bytes(Array.from({ length: 256 }, (_, i) => i)), bytes(Array.from({ length: 256 }, (_, i) => 255 - i)),
];
// Random bytes, and valid text with random bytes spliced in.
for (let i = 0; i < 100; i++) {
  const n = 1 + random(200), b = Buffer.alloc(n);
  for (let k = 0; k < n; k++) b[k] = random(256);
  b[random(n)] = 0xf8 + random(8);  // F8..FF never occur in UTF-8: the case is surely ill-formed
  invalid.push(b);
  const text = Buffer.from(valid[random(valid.length)].slice(0, 300), 'utf8');
  const at = random(text.length + 1);
  invalid.push(bytes(text.subarray(0, at), [0x80 + random(128)], text.subarray(at)));
}

let lines;
if (mode === 'valid') lines = valid.map(hex);
else if (mode === 'invalid') lines = invalid.filter(b => !Buffer.from(b.toString('utf8'), 'utf8').equals(b)).map(b => b.toString('hex'));
else {
  console.error('usage: node hard_strings.js valid|invalid > strings.hex');
  process.exit(2);
}
if (mode === 'invalid' && lines.length !== invalid.length) {
  console.error('hard_strings.js: a case in the invalid list is well-formed UTF-8');
  process.exit(1);
}
process.stdout.write(lines.join('\n') + '\n');
