#!/usr/bin/env node
// Writes llmload's own accuracy test sets into this directory, deterministically (a fixed seed,
// our own PRNG: the same files on every machine and node version). No packages needed:
//
//   node data/accuracy/make_sets.js
//
//   arithmetic.jsonl      GSM8K format, 200 rows (llmload run --dataset-name gsm8k)
//   arithmetic_test.csv   MMLU format, 200 rows, subject "arithmetic" (--dataset-name mmlu)
//   graded.jsonl          llmload JSONL, 20 rows, one or more per grader (--dataset-name custom)
//
// The arithmetic contract (README.md; llmload-server's mock answers it): a question holds exactly
// one expression of 2 to 4 integer operands in 1..99 separated by single spaces and the operators
// +, - and *, e.g. "48 + 17 * 3"; * binds before + and -, which go left to right; nothing else in
// the question is numeric. The value may be negative.
'use strict';

const fs = require('fs');
const path = require('path');

const ROWS = 200;
const OUT_DIR = __dirname;

// mulberry32: a small 32-bit PRNG whose output is fixed by its code.
function makeRng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    int: (n) => Math.floor(next() * n), // 0..n-1
    pick: (list) => list[Math.floor(next() * list.length)],
  };
}

// * first, then + and - left to right.
function evaluate(operands, operators) {
  const terms = [operands[0]];
  const signs = [1];
  operators.forEach((op, i) => {
    if (op === '*') {
      terms[terms.length - 1] *= operands[i + 1];
    } else {
      terms.push(operands[i + 1]);
      signs.push(op === '+' ? 1 : -1);
    }
  });
  return terms.reduce((sum, t, i) => sum + signs[i] * t, 0);
}

// `count` distinct expressions: {text: "48 + 17 * 3", value: 99}.
function makeExpressions(rng, count) {
  const seen = new Set();
  const out = [];
  while (out.length < count) {
    const n = 2 + rng.int(3);
    const operands = Array.from({ length: n }, () => 1 + rng.int(99));
    const operators = Array.from({ length: n - 1 }, () => rng.pick(['+', '-', '*']));
    let text = String(operands[0]);
    operators.forEach((op, i) => {
      text += ` ${op} ${operands[i + 1]}`;
    });
    if (seen.has(text)) continue;
    seen.add(text);
    out.push({ text, value: evaluate(operands, operators) });
  }
  return out;
}

// No digits in these: the expression is the only numeric text of a question.
const WORDINGS = [
  (x) => `What is ${x}?`,
  (x) => `Compute ${x}.`,
  (x) => `Calculate ${x} and give the result.`,
  (x) => `Work out ${x}.`,
  (x) => `Evaluate ${x}.`,
  (x) => `Find the value of ${x}.`,
  (x) => `What do you get for ${x}?`,
  (x) => `Please compute ${x} and state the answer.`,
];

function gsm8kLines() {
  const rng = makeRng(0x6d385b);
  return makeExpressions(rng, ROWS).map((e) => {
    const question = rng.pick(WORDINGS)(e.text);
    return JSON.stringify({ question, answer: `${e.text} = ${e.value}\n#### ${e.value}` });
  });
}

// RFC 4180: quote a field holding a comma, a quote or a line break; double its quotes.
function csvField(s) {
  const text = String(s);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

// Three distinct integers near `value` (within 10), none equal to it.
function distractors(rng, value) {
  const out = new Set();
  while (out.size < 3) {
    const offset = 1 + rng.int(10);
    out.add(value + (rng.int(2) === 0 ? -offset : offset));
  }
  return [...out];
}

function mmluLines() {
  const rng = makeRng(0x4d4d4c55);
  const letters = 'ABCD';
  // Exactly ROWS / 4 of each answer letter, in a shuffled order (Fisher-Yates).
  const answers = Array.from({ length: ROWS }, (_, i) => i % 4);
  for (let i = answers.length - 1; i > 0; --i) {
    const j = rng.int(i + 1);
    [answers[i], answers[j]] = [answers[j], answers[i]];
  }
  return makeExpressions(rng, ROWS).map((e, i) => {
    const wrong = distractors(rng, e.value);
    const options = [];
    for (let k = 0; k < 4; ++k) options.push(k === answers[i] ? e.value : wrong.shift());
    return [`What is ${e.text}?`, ...options, letters[answers[i]]].map(csvField).join(',');
  });
}

// One or more rows per grader; the arithmetic ones follow the contract above.
function gradedRows() {
  const nameAge = {
    type: 'object',
    required: ['name', 'age'],
    properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 0 } },
  };
  const colours = { type: 'array', items: { type: 'string' }, minItems: 3, maxItems: 3 };
  const mc = (topic, q, opts) =>
    `The following is a multiple choice question about ${topic}.\n\n${q}\n` +
    opts.map((o, i) => `${'ABCD'[i]}. ${o}`).join('\n') + '\nAnswer:';
  return [
    { prompt: 'Question: What is 12 * 12?\nAnswer:', reference: '144', grader: 'number', subset: 'arithmetic', output_tokens: 64 },
    { prompt: 'Question: Compute 75 - 18 + 6.\nAnswer:', reference: '75 - 18 + 6 = 63\n#### 63', grader: 'number', subset: 'arithmetic', output_tokens: 64 },
    { prompt: 'Question: How many legs do three spiders have in total?\nAnswer:', reference: '24', grader: 'number', subset: 'knowledge', output_tokens: 128 },
    { prompt: 'What is 22 divided by 7, rounded to two decimal places?', reference: '3.14', grader: 'number:0.01', subset: 'arithmetic', output_tokens: 64 },
    { prompt: mc('arithmetic', 'What is 6 * 7?', ['42', '36', '48', '13']), reference: 'A', grader: 'choice', subset: 'arithmetic', output_tokens: 16 },
    { prompt: mc('astronomy', 'Which planet is closest to the Sun?', ['Venus', 'Mercury', 'Mars', 'Earth']), reference: 'B', grader: 'choice', subset: 'knowledge', output_tokens: 16 },
    { prompt: 'Reply with exactly the word OK and nothing else.', reference: 'OK', grader: 'exact', subset: 'format', output_tokens: 8 },
    { prompt: 'Write the word "cat" backwards in lower case, and nothing else.', reference: 'tac', grader: 'exact', subset: 'format', output_tokens: 8 },
    { prompt: 'Write the first three letters of the English alphabet in upper case, separated by commas, without spaces, and nothing else.', reference: 'A,B,C', grader: 'exact', subset: 'format', output_tokens: 16 },
    { prompt: 'What is the capital of France? Answer with the city name only.', reference: 'Paris', grader: 'normalized', subset: 'knowledge', output_tokens: 16 },
    { prompt: 'Which chemical element has the symbol Fe? Answer with one word.', reference: 'iron', grader: 'normalized', subset: 'knowledge', output_tokens: 16 },
    { prompt: 'In which year did people first walk on the Moon? Answer with the year only.', reference: '1969', grader: 'normalized', subset: 'knowledge', output_tokens: 16 },
    // No "grader": a reference alone is graded "normalized".
    { prompt: 'What colour is a clear daytime sky? Answer with one word.', reference: 'blue', subset: 'knowledge', output_tokens: 16 },
    { prompt: 'What is the chemical symbol for gold? End your reply with a line "Symbol: XX".', reference: 'Au', grader: 'regex:Symbol: *([A-Z][a-z]?)', subset: 'knowledge', output_tokens: 64 },
    { prompt: 'Translate "thank you" into French. Put the translation in double quotes.', reference: 'merci', grader: 'regex:"([^"]+)"', subset: 'knowledge', output_tokens: 32 },
    { prompt: 'Describe a 36-year-old person called Ada as a JSON object with the keys "name" (a string) and "age" (an integer). Reply with the JSON only.', reference: nameAge, grader: 'json', subset: 'format', output_tokens: 64 },
    { prompt: 'List the three primary colours of light as a JSON array of strings. Reply with the JSON only.', reference: colours, grader: 'json', subset: 'format', output_tokens: 64 },
    // "json" without a reference: the output only has to be valid JSON.
    { prompt: 'Describe any book as a JSON object with its title and author. Reply with the JSON only.', grader: 'json', subset: 'format', output_tokens: 96 },
    {
      messages: [
        { role: 'system', content: 'You are a calculator. End every answer with a line "#### <number>".' },
        { role: 'user', content: 'What is 9 * 8?' },
      ],
      reference: '72', grader: 'number', subset: 'chat', output_tokens: 64,
    },
    {
      messages: [
        { role: 'user', content: 'Remember the word "harbour".' },
        { role: 'assistant', content: 'I will remember it.' },
        { role: 'user', content: 'Which word did I ask you to remember? Answer with the word only.' },
      ],
      reference: 'harbour', grader: 'normalized', subset: 'chat', output_tokens: 16,
    },
  ];
}

function write(name, lines) {
  fs.writeFileSync(path.join(OUT_DIR, name), lines.join('\n') + '\n');
  console.log(`${name}: ${lines.length} rows`);
}

write('arithmetic.jsonl', gsm8kLines());
write('arithmetic_test.csv', mmluLines());
write('graded.jsonl', gradedRows().map((r) => JSON.stringify(r)));
