#!/usr/bin/env node
// hdr-histogram-js side of llmload's interop tests (same schema as hdr_interop_tool and
// java/Check.java):
//   node check.js read-hlog <file.hlog>
//       summary JSON of each interval (HistogramLogReader) and of each tag's merge
//   node check.js write <values.txt> <out.hlog> <out-b64.txt>
//       records the values file per interval, writes an .hlog with HistogramLogWriter and
//       "<tag> <encodeIntoCompressedBase64>" lines; prints the summary JSON of what it recorded
// hdr-histogram-js has no getMinValue and its maxValue is the raw maximum, so "min"/"max" are
// getValueAtPercentile(0) / (100): the lowest / highest equivalent values, as in Java.
"use strict";
const fs = require("fs");
let hdr;
try {
  hdr = require("hdr-histogram-js");
} catch (e) {
  console.error("hdr-histogram-js is not installed in tests/interop/js: run scripts/setup.sh");
  process.exit(3);
}

const PERCENTILES = [["p50", 50], ["p90", 90], ["p99", 99], ["p99.9", 99.9], ["p99.99", 99.99]];
const START_TIME_MS = 1700000000000;
const newHistogram = () =>
  hdr.build({ bitBucketSize: 64, autoResize: false, lowestDiscernibleValue: 1,
              highestTrackableValue: 3600000000, numberOfSignificantValueDigits: 3 });

function summary(h) {
  const s = {
    count: h.totalCount, min: h.getValueAtPercentile(0), max: h.getValueAtPercentile(100),
    mean: h.mean, stddev: h.stdDeviation,
  };
  for (const [name, p] of PERCENTILES) s[name] = h.getValueAtPercentile(p);
  return s;
}

function summarize(intervals) {
  const byTag = new Map();
  const out = { intervals: [], tags: {} };
  for (const h of intervals) {
    const tag = !h.tag || h.tag === "NO TAG" ? "" : h.tag;
    out.intervals.push({ tag, start_ms: h.startTimeStampMsec, end_ms: h.endTimeStampMsec, ...summary(h) });
    if (!byTag.has(tag)) byTag.set(tag, newHistogram());
    byTag.get(tag).add(h);
  }
  for (const tag of [...byTag.keys()].sort()) out.tags[tag] = summary(byTag.get(tag));
  return out;
}

function readHlog(path) {
  const reader = new hdr.HistogramLogReader(fs.readFileSync(path, "ascii"), 64);
  const intervals = [];
  for (let h; (h = reader.nextIntervalHistogram()) !== null;) intervals.push(h);
  console.log(JSON.stringify(summarize(intervals), null, 1));
}

function write(valuesPath, hlogPath, b64Path) {
  const intervals = [];
  const times = [];
  for (const line of fs.readFileSync(valuesPath, "ascii").split("\n")) {
    const f = line.split(" ");
    if (f[0] === "I") {
      const h = newHistogram();
      if (f[1] !== "-") h.tag = f[1];
      const start = Number.parseFloat(f[2]);
      const length = Number.parseFloat(f[3]);
      h.startTimeStampMsec = START_TIME_MS + Math.round(start * 1000);
      h.endTimeStampMsec = START_TIME_MS + Math.round((start + length) * 1000);
      intervals.push(h);
      times.push([start, length]);
    } else if (f[0] === "V") {
      intervals[intervals.length - 1].recordValueWithCount(Number(f[1]), Number(f[2]));
    }
  }
  let log = "";
  const writer = new hdr.HistogramLogWriter((s) => { log += s; });
  writer.outputComment("[Logged with llmload-interop hdr-histogram-js]");
  writer.outputLogFormatVersion();
  writer.outputStartTime(START_TIME_MS);
  writer.outputLegend();
  let b64 = "";
  intervals.forEach((h, i) => {
    const [start, length] = times[i];
    writer.outputIntervalHistogram(h, start, start + length, 1000);
    b64 += `${h.tag && h.tag !== "NO TAG" ? h.tag : "-"} ${hdr.encodeIntoCompressedBase64(h)}\n`;
  });
  fs.writeFileSync(hlogPath, log);
  fs.writeFileSync(b64Path, b64);
  console.log(JSON.stringify(summarize(intervals), null, 1));
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === "read-hlog" && args.length === 1) readHlog(args[0]);
else if (cmd === "write" && args.length === 3) write(...args);
else {
  console.error("usage: check.js read-hlog <file.hlog> | write <values.txt> <out.hlog> <out-b64.txt>");
  process.exit(2);
}
