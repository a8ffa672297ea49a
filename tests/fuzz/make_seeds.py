#!/usr/bin/env python3
"""Writes the seed corpora under tests/data/fuzz/<target>/ (run once; the files are committed).

Usage: tests/fuzz/make_seeds.py [HLOG]
HLOG: an .hlog written by the project's own writer, e.g. from
`build/bin/hdr_interop_tool gen values.txt out.hlog expected.json`; without it the hdr_codec
seeds are left as they are. Crash reproducers (crash-*, regress-*) are never touched.
"""
import base64
import json
import os
import sys
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "data", "fuzz")
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def write(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def dumps(o):
    return json.dumps(o, separators=(",", ":"))


def sse(payloads, eol="\n"):
    return "".join("data: " + (p if isinstance(p, str) else dumps(p)) + eol + eol for p in payloads)


def chat_stream(tokens, usage=False, continuous=False, prompt=12, step=1):
    base = {"id": "chatcmpl-9f2c4b7e1a3d4c5e8f6a7b8c9d0e1f2a", "object": "chat.completion.chunk",
            "created": 1700000000, "model": MODEL}
    out = []
    def u(n):
        return {"prompt_tokens": prompt, "total_tokens": prompt + n, "completion_tokens": n}
    first = dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""},
                                 "logprobs": None, "finish_reason": None}])
    if continuous:
        first["usage"] = u(0)
    out.append(first)
    for i, t in enumerate(tokens):
        last = i == len(tokens) - 1
        c = {"index": 0, "delta": {"content": t}, "logprobs": None, "finish_reason": "length" if last else None}
        if last:
            c["stop_reason"] = None
        chunk = dict(base, choices=[c])
        if continuous:
            chunk["usage"] = u((i + 1) * step)
        out.append(chunk)
    if usage:
        out.append(dict(base, choices=[], usage=u(len(tokens) * step)))
    out.append("[DONE]")
    return out


def completion_stream(tokens, usage=False, continuous=False, prompt=7):
    base = {"id": "cmpl-0123456789abcdef0123456789abcdef", "object": "text_completion",
            "created": 1700000000, "model": MODEL}
    out = []
    for i, t in enumerate(tokens):
        last = i == len(tokens) - 1
        chunk = dict(base, choices=[{"index": 0, "text": t, "logprobs": None,
                                     "finish_reason": "length" if last else None, "stop_reason": None}])
        if continuous:
            chunk["usage"] = {"prompt_tokens": prompt, "total_tokens": prompt + i + 1, "completion_tokens": i + 1}
        out.append(chunk)
    if usage:
        out.append(dict(base, choices=[], usage={"prompt_tokens": prompt, "total_tokens": prompt + len(tokens),
                                                 "completion_tokens": len(tokens),
                                                 "prompt_tokens_details": {"cached_tokens": 4}}))
    out.append("[DONE]")
    return out


TOKENS = [" The", " quick", " brown", " fox", " jumps"]
ERR_400 = {"error": {"message": "This model's maximum context length is 8192 tokens. However, your request has "
                                "9000 input tokens. Please reduce the length of the input messages.",
                     "type": "BadRequestError", "param": "messages", "code": 400}}
ERR_404 = {"error": {"message": "The model `gpt-4` does not exist.", "type": "NotFoundError", "param": "model",
                     "code": 404}}
ERR_OLD = {"object": "error", "message": "Stream options can only be defined when `stream=True`.",
           "type": "BadRequestError", "param": None, "code": 400}
CHAT_BODY = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": MODEL,
             "choices": [{"index": 0, "message": {"role": "assistant", "content": " The quick brown"},
                          "logprobs": None, "finish_reason": "length", "stop_reason": None}],
             "usage": {"prompt_tokens": 12, "total_tokens": 15, "completion_tokens": 3}}
CMPL_BODY = {"id": "cmpl-1", "object": "text_completion", "created": 1700000000, "model": MODEL,
             "choices": [{"index": 0, "text": " The quick", "logprobs": None, "finish_reason": "length",
                          "stop_reason": None}],
             "usage": {"prompt_tokens": 7, "total_tokens": 9, "completion_tokens": 2}}
STREAM_ERROR = sse([chat_stream(TOKENS[:2])[0], chat_stream(TOKENS[:2])[1],
                    {"error": {"message": "engine died", "type": "InternalServerError", "param": None, "code": 500}},
                    "[DONE]"])

STREAMS = {
    "chat_usage.sse": sse(chat_stream(TOKENS, usage=True)),
    "chat_plain.sse": sse(chat_stream(TOKENS[:3])),
    "chat_continuous_usage.sse": sse(chat_stream(TOKENS, usage=True, continuous=True)),
    "chat_multitoken_crlf.sse": sse(chat_stream(TOKENS[:3], usage=True, continuous=True, step=3), eol="\r\n"),
    "completions_usage.sse": sse(completion_stream(TOKENS, usage=True)),
    "completions_continuous.sse": sse(completion_stream(TOKENS[:3], usage=True, continuous=True)),
    "stream_error.sse": STREAM_ERROR,
    "features.sse": "\xef\xbb\xbf: keep-alive\r\nevent: message\nid: 42\nretry: 100\ndata: line one\ndata: line two"
                    "\r\r\ndata\n\ndata:no-space\r\rfield-without-colon\n\n" + sse(["[DONE]"]),
    "truncated.sse": sse(completion_stream(TOKENS[:2]))[:-40],
}


# tokenizer: tokenizer.json, a NUL, then the text (fuzz_tokenizer.cpp). The tokenizers are those of
# tests/tokenizer/tiny_tokenizers.hpp and variations (metaspace, added tokens, normalizers, regex
# splits, post-processors), plus malformed files.
def byte_level_tok(array_merges=False, ignore_merges=False):
    vocab = {"h": 0, "e": 1, "l": 2, "o": 3, "\u0120": 4, "w": 5, "r": 6, "d": 7, "he": 8, "ll": 9, "hell": 10,
             "hello": 11, "\u0120w": 12, "or": 13, "\u0120wor": 14, "ld": 15, "\u0120world": 16, "\u0120worl": 18}
    pairs = [("h", "e"), ("l", "l"), ("he", "ll"), ("hell", "o"), ("\u0120", "w"), ("o", "r"), ("\u0120w", "or"),
             ("l", "d"), ("\u0120wor", "ld")]
    return {
        "version": "1.0",
        "added_tokens": [{"id": 17, "content": "<|end|>", "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"Sequence": {"id": "A", "type_id": 0}},
                                      {"SpecialToken": {"id": "<|end|>", "type_id": 0}}],
                           "pair": [],
                           "special_tokens": {"<|end|>": {"id": "<|end|>", "ids": [17], "tokens": ["<|end|>"]}}},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": ignore_merges, "vocab": vocab,
                  "merges": [list(p) if array_merges else p[0] + " " + p[1] for p in pairs]},
    }


def sentencepiece_tok():
    return {
        "added_tokens": [{"id": 0, "content": "<unk>", "special": True, "normalized": False},
                         {"id": 8, "content": "<s>", "special": True, "normalized": False}],
        "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                                           {"type": "Replace", "pattern": {"String": " "},
                                                            "content": "\u2581"}]},
        "pre_tokenizer": None,
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "special_tokens": {"<s>": {"id": "<s>", "ids": [8], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"},
            {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": True, "fuse_unk": True,
                  "vocab": {"<unk>": 0, "<0xC3>": 1, "<0xA9>": 2, "\u2581": 3, "h": 4, "i": 5, "\u2581h": 6,
                            "\u2581hi": 7, "<s>": 8},
                  "merges": ["\u2581 h", "\u2581h i"]},
    }


LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                r"\s*[\r\n]+|\s+(?!\S)|\s+")
TOKENIZER_TEXT = ("hello world<|end|> hello  world\n\n\thi \u00e9 caf\u00e9 cafe\u0301 \u4f60\u597d 12345 "
                  "\U0001F469\u200d\U0001F4BB don't   \u3000x<s>hi")


def tokenizer_seeds():
    def tok(name, doc, text=TOKENIZER_TEXT, ascii_json=False):
        # Most documents spell non-ASCII tokens in UTF-8, one with \uXXXX escapes.
        head = doc if isinstance(doc, (str, bytes)) else json.dumps(doc, separators=(",", ":"),
                                                                      ensure_ascii=ascii_json)
        head = head if isinstance(head, bytes) else head.encode()
        write("tokenizer", name, head if text is None else head + b"\0" + text.encode())
    tok("byte_level", byte_level_tok(), ascii_json=True)
    tok("byte_level_array_merges_ignore_merges", byte_level_tok(array_merges=True, ignore_merges=True),
        "hello hello world world\U0001F600 \r\n   \u00a0\u2028end")
    tok("byte_level_default_text", byte_level_tok(), None)
    tok("sentencepiece_style", sentencepiece_tok())
    tok("sentencepiece_style_default_text", sentencepiece_tok(), None)
    # Metaspace pre-tokenizer and decoder (Mistral/Gemma style), added tokens with lstrip/rstrip and
    # a normalized one, NFC.
    meta = sentencepiece_tok()
    meta["normalizer"] = {"type": "NFC"}
    meta["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True}
    meta["decoder"] = {"type": "Sequence", "decoders": [{"type": "Metaspace", "replacement": "\u2581",
                                                         "prepend_scheme": "first", "split": True},
                                                        {"type": "ByteFallback"}, {"type": "Fuse"}]}
    meta["added_tokens"] += [{"id": 9, "content": "[INST]", "special": True, "lstrip": True, "rstrip": True,
                              "normalized": False},
                             {"id": 10, "content": "h\u00e9", "special": False, "normalized": True}]
    tok("metaspace_added_tokens", meta, "[INST]  hi he\u0301 hi  [INST]hi\u00e9\U0001F600  \u2581h")
    # Llama 3 style: a Split regex then ByteLevel without its regex, normalizers in a sequence,
    # digits, and a RoBERTa post-processor.
    l3 = byte_level_tok(ignore_merges=True)
    l3["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "NFC"}, {"type": "Replace", "pattern": {"Regex": r"\s{2,}"}, "content": " "},
        {"type": "Strip", "strip_left": True, "strip_right": False}]}
    l3["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "Split", "pattern": {"Regex": LLAMA3_SPLIT}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
    l3["post_processor"] = {"type": "Sequence", "processors": [
        {"type": "ByteLevel", "trim_offsets": False},
        {"type": "RobertaProcessing", "cls": ["<|end|>", 17], "sep": ["<|end|>", 17]}]}
    tok("llama3_style_split_regex", l3)
    # Split behaviours and a string pattern; decoder Replace with a regex and Strip.
    sp = sentencepiece_tok()
    sp["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"String": "\u2581"}, "behavior": "MergedWithNext", "invert": False},
        {"type": "Split", "pattern": {"Regex": r"(?:\p{Lu}\p{Ll}*+)+|[0-9]{2}?|.??"}, "behavior": "Contiguous",
         "invert": True}]}
    sp["decoder"] = {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"Regex": "\u2581+"}, "content": " "}, {"type": "ByteFallback"},
        {"type": "Strip", "content": "h", "start": 2, "stop": 2}]}
    tok("split_behaviours", sp, "HelloWorld hi hi\u00e9 12 345 \u2581\u2581hi")
    # Whitespace runs and emoji through the GPT-2 pattern.
    tok("whitespace_runs", byte_level_tok(), " \t \n\n\n    \r\n hello\u00a0\u00a0world  \U0001F44D\U0001F3FD"
        "\u200b\u2003 \U0001F1FA\U0001F1F8 \ufeffworld\t\t")
    # Malformed and unsupported files.
    tok("malformed_truncated", dumps(byte_level_tok())[:180])
    bad = byte_level_tok()
    bad["model"]["merges"].append("h zz")
    tok("malformed_merge_not_in_vocab", bad)
    bad = byte_level_tok()
    bad["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": r"(?<=x)\p{L}+"}, "behavior": "Isolated"}
    tok("unsupported_lookbehind", bad)
    bad = byte_level_tok()
    bad["added_tokens"][0]["id"] = "17"
    tok("malformed_added_token_id", bad)
    tok("malformed_top_level_array", "[1, 2, 3]")


def main():
    for name, s in STREAMS.items():
        write("sse_parser", name, s.encode("latin-1") if name == "features.sse" else s)
        write("stream_decoder", name, s.encode("latin-1") if name == "features.sse" else s)
    for name, body in {"err400.json": ERR_400, "err404.json": ERR_404, "err_old.json": ERR_OLD,
                       "chat_body.json": CHAT_BODY, "completion_body.json": CMPL_BODY,
                       "chunk.json": chat_stream(TOKENS[:1], continuous=True)[1]}.items():
        write("stream_decoder", name, dumps(body))
    write("stream_decoder", "detail.json", '{"detail":"Not Found"}')

    # request_tracker: flags, status slot, content-type slot, outcome slot, body.
    def tracker(name, flags, status, ct, outcome, body):
        write("request_tracker", name, bytes([flags, status, ct, outcome]) + body.encode())
    tracker("chat_stream", 0x23, 0, 0, 0, STREAMS["chat_usage.sse"])
    tracker("chat_continuous", 0x43, 0, 1, 0, STREAMS["chat_continuous_usage.sse"])
    tracker("completions_stream", 0x02, 0, 0, 0, STREAMS["completions_usage.sse"])
    tracker("completions_no_usage", 0x22, 0, 0, 0, sse(completion_stream(TOKENS)))
    tracker("stream_cut", 0x03, 0, 0, 3, STREAMS["truncated.sse"])
    tracker("stream_error", 0x03, 0, 0, 0, STREAM_ERROR)
    tracker("chat_body", 0x01, 0, 2, 0, dumps(CHAT_BODY))
    tracker("completion_body", 0x00, 3, 2, 0, dumps(CMPL_BODY))
    tracker("http_400", 0x03, 6, 2, 0, dumps(ERR_400))
    tracker("http_404", 0x02, 7, 2, 0, dumps(ERR_404))
    tracker("http_500_text", 0x03, 10, 4, 0, "Internal Server Error")
    tracker("stream_as_json", 0x03, 0, 2, 0, dumps(CHAT_BODY))

    # http_response: flags, max piece size (255: all at once), the response bytes.
    def http(name, flags, piece, head, body, chunked=False):
        if chunked:
            wire = head + "Transfer-Encoding: chunked\r\n\r\n"
            for ev in body:
                wire += "%x\r\n%s\r\n" % (len(ev), ev)
            wire += "0\r\n\r\n"
        else:
            wire = head + "\r\n" + body
        write("http_response", name, bytes([flags, piece]) + wire.encode())
    events = [sse([p]) for p in chat_stream(TOKENS, usage=True)]
    http("sse_chunked", 0x03, 255,
         "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n", events, chunked=True)
    http("sse_chunked_small_pieces", 0x03, 6,
         "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n", events[:3] + events[-1:],
         chunked=True)
    cs = STREAMS["completions_usage.sse"]
    http("sse_content_length", 0x02, 40,
         "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n" % len(cs), cs)
    http("sse_until_eof", 0x02, 255, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n", cs)
    body = dumps(CHAT_BODY)
    http("json_content_length", 0x01, 255,
         "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n" % len(body), body)
    body = dumps(ERR_404)
    http("error_404", 0x03, 255,
         "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: %d\r\n" % len(body), body)
    write("http_response", "chunk_ext_trailer", bytes([0x03, 255]) + (
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        "e;ext=1\r\ndata: [DONE]\n\n\r\n0\r\nX-Trailer: 1\r\n\r\n").encode())
    # Bad chunk framing after [DONE] (found by fuzz.sh in CI, 2026-11-27): the stream stays a success.
    write("http_response", "bad_chunk_after_done", bytes([0x03, 6]) + (
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        "e\r\ndata: [DONE]\n\n\r\n/0\r\n\r\n").encode())
    write("http_response", "continue_then_ok", bytes([0x03, 255]) + (
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").encode())
    write("http_response", "http10_close", bytes([0x02, 3]) + (
        "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + cs).encode())

    # server_request: method slot, target slot, config slot, body.
    def req(name, method, target, config, body):
        write("server_request", name, bytes([method, target, config]) + (body if isinstance(body, str) else dumps(body)).encode())
    req("completions_stream", 0, 0, 0, {"model": "llmload-mock", "prompt": "the quick brown fox", "max_tokens": 8,
                                        "stream": True, "ignore_eos": True, "min_tokens": 8,
                                        "stream_options": {"include_usage": True}})
    req("completions_plain", 0, 0, 0, {"model": "llmload-mock", "prompt": ["one two three"], "max_tokens": 3,
                                       "temperature": 0.0, "top_p": 1, "seed": 5, "n": 1})
    req("chat_stream_continuous", 0, 1, 0, {"model": "llmload-mock", "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "hello there"}]},
        {"role": "assistant", "content": None}],
        "max_completion_tokens": 5, "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True}})
    req("chat_nonstream", 0, 1, 1, {"model": "m", "messages": [{"role": "user", "content": "a b c"}]})
    req("tokenize_prompt", 0, 2, 0, {"model": "llmload-mock", "prompt": "hello  world\tagain",
                                     "return_token_strs": True})
    req("tokenize_messages", 0, 2, 0, {"messages": [{"role": "user", "content": "hi there"}]})
    req("models", 1, 3, 1, "")
    req("health", 1, 4, 0, "")
    req("bad_json", 0, 0, 0, '{"model": "llmload-mock", "prompt": ')
    req("too_long", 0, 0, 2, {"model": "llmload-mock", "prompt": "a b c", "max_tokens": 1})
    req("unknown_model", 0, 1, 0, {"model": "gpt-4", "messages": [{"role": "user", "content": "x"}]})
    req("wrong_types", 0, 0, 0, {"model": 7, "prompt": {"x": 1}, "max_tokens": "9", "stream": "yes"})
    req("stream_options_without_stream", 0, 0, 0, {"model": "llmload-mock", "prompt": "x",
                                                   "stream_options": {"include_usage": True}})
    req("raw_target", 0, 11, 0, "/v1/completions?x=1\n" + dumps({"model": "llmload-mock", "prompt": "x",
                                                                  "max_tokens": 2, "stream": True}))
    req("method_not_allowed", 1, 0, 0, "")

    # scenario_file: the shipped scenarios plus a JSON one and a few bad ones.
    sc = os.path.join(ROOT, "scenarios")
    for f in sorted(os.listdir(sc)):
        if f.endswith(".yaml"):
            with open(os.path.join(sc, f), "rb") as fh:
                write("scenario_file", f, fh.read())
    write("scenario_file", "server.json", dumps({"scenario": "server", "endpoint": "chat", "request_rate": 12.5,
                                                 "input_tokens": 512, "output_tokens": 128, "duration": "60s",
                                                 "warmup": "10s", "seed": 3, "stream": True,
                                                 "slo": {"ttft": "2000ms", "tpot": "200ms", "percentile": 99}}))
    write("scenario_file", "bad_key.yaml", "scenario: offline\nnum-requests: 10\nbogus_key: 1\n")
    write("scenario_file", "api_key.yaml", "api_key: sk-secret\n")
    write("scenario_file", "list.yaml", "- scenario: server\n- request_rate: 1\n")
    write("scenario_file", "anchors.yaml", "a: &x server\nscenario: *x\nrequest_rate: 1e1\ntimeout: 1m\n"
                                          "idle_timeout: 500ms\nmax_inflight: 3\n")

    tokenizer_seeds()

    if len(sys.argv) > 1:
        with open(sys.argv[1], "rb") as fh:
            lines = fh.read().split(b"\n")
        header = [l for l in lines if not l.startswith(b"Tag=") and l]
        intervals = [l for l in lines if l.startswith(b"Tag=")]
        write("hdr_codec", "interop.hlog", b"\n".join(header + intervals[:4]) + b"\n")
        write("hdr_codec", "crlf_relative.hlog",
              b"#[StartTime: 1700000000.000 (seconds since epoch), Tue Nov 14 22:13:20 UTC 2023]\r\n" +
              b"0.000,1.000,2.000," + intervals[1].split(b",")[-1] + b"\r\n")
        b64 = intervals[0].split(b",")[-1]
        write("hdr_codec", "histogram.b64", b64)
        raw = base64.b64decode(b64)
        write("hdr_codec", "histogram.bin", raw)
        write("hdr_codec", "histogram_inner.bin", zlib.decompress(raw[8:]))
        small = min(intervals, key=len).split(b",")[-1]
        write("hdr_codec", "small_inner.bin", zlib.decompress(base64.b64decode(small)[8:]))


if __name__ == "__main__":
    main()
