// HdrHistogram Java (Debian libhdrhistogram-java 2.1.11) side of llmload's interop tests.
// Run as a single-file program:
//   java -cp /usr/share/java/hdrhistogram.jar Check.java read-hlog <file.hlog>
//       prints the summary JSON (same schema as hdr_interop_tool) of every interval, read with
//       HistogramLogReader, and of each tag's merge
//   java ... Check.java write <values.txt> <out.hlog> <out-b64.txt>
//       records the values file into Histogram(1, 3600000000, 3) per interval, writes them with
//       HistogramLogWriter (same header as hdr_interop_tool gen) and, per line, "<tag> <base64 of
//       encodeIntoCompressedByteBuffer(buf, 9)>"; prints the summary JSON of what it recorded
import org.HdrHistogram.EncodableHistogram;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogReader;
import org.HdrHistogram.HistogramLogWriter;

import java.io.BufferedReader;
import java.io.FileReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

public class Check {
    static final double[] PERCENTILES = {50, 90, 99, 99.9, 99.99};
    static final String[] NAMES = {"p50", "p90", "p99", "p99.9", "p99.99"};
    static final long START_TIME_MS = 1700000000000L;

    static String quote(String s) { return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\""; }

    static String summary(Histogram h, String extra) {
        StringBuilder sb = new StringBuilder("{");
        sb.append(extra);
        sb.append("\"count\":").append(h.getTotalCount());
        sb.append(",\"min\":").append(h.getMinValue());
        sb.append(",\"max\":").append(h.getMaxValue());
        sb.append(",\"mean\":").append(h.getMean());
        sb.append(",\"stddev\":").append(h.getStdDeviation());
        for (int i = 0; i < PERCENTILES.length; i++) {
            sb.append(",\"").append(NAMES[i]).append("\":").append(h.getValueAtPercentile(PERCENTILES[i]));
        }
        return sb.append("}").toString();
    }

    static String summarize(List<Histogram> intervals) {
        Map<String, Histogram> byTag = new TreeMap<>();
        StringBuilder sb = new StringBuilder("{\"intervals\":[");
        for (int i = 0; i < intervals.size(); i++) {
            Histogram h = intervals.get(i);
            String tag = h.getTag() == null ? "" : h.getTag();
            sb.append(i == 0 ? "\n" : ",\n").append(summary(h, "\"tag\":" + quote(tag) + ",\"start_ms\":"
                    + h.getStartTimeStamp() + ",\"end_ms\":" + h.getEndTimeStamp() + ","));
            byTag.computeIfAbsent(tag, t -> new Histogram(1, 3600000000L, 3)).add(h);
        }
        sb.append("],\n\"tags\":{");
        boolean first = true;
        for (Map.Entry<String, Histogram> e : byTag.entrySet()) {
            sb.append(first ? "\n" : ",\n").append(quote(e.getKey())).append(":").append(summary(e.getValue(), ""));
            first = false;
        }
        return sb.append("}}").toString();
    }

    static void readHlog(String path) throws Exception {
        List<Histogram> intervals = new ArrayList<>();
        try (HistogramLogReader reader = new HistogramLogReader(path)) {
            EncodableHistogram e;
            while ((e = reader.nextIntervalHistogram()) != null) intervals.add((Histogram) e);
        }
        System.out.println(summarize(intervals));
    }

    static void write(String valuesPath, String hlogPath, String b64Path) throws Exception {
        List<Histogram> intervals = new ArrayList<>();
        List<double[]> times = new ArrayList<>();
        try (BufferedReader in = new BufferedReader(new FileReader(valuesPath))) {
            String line;
            while ((line = in.readLine()) != null) {
                String[] f = line.split(" ");
                if (f[0].equals("I")) {
                    Histogram h = new Histogram(1, 3600000000L, 3);
                    if (!f[1].equals("-")) h.setTag(f[1]);
                    double start = Double.parseDouble(f[2]), length = Double.parseDouble(f[3]);
                    h.setStartTimeStamp(START_TIME_MS + Math.round(start * 1000));
                    h.setEndTimeStamp(START_TIME_MS + Math.round((start + length) * 1000));
                    intervals.add(h);
                    times.add(new double[] {start, length});
                } else if (f[0].equals("V")) {
                    intervals.get(intervals.size() - 1).recordValueWithCount(Long.parseLong(f[1]), Long.parseLong(f[2]));
                }
            }
        }
        try (PrintStream hlog = new PrintStream(hlogPath, "US-ASCII"); PrintStream b64 = new PrintStream(b64Path, "US-ASCII")) {
            HistogramLogWriter w = new HistogramLogWriter(hlog);
            w.outputComment("[Logged with llmload-interop]");
            w.outputLogFormatVersion();
            w.outputStartTime(START_TIME_MS);
            w.outputBaseTime(START_TIME_MS);
            w.outputLegend();
            for (int i = 0; i < intervals.size(); i++) {
                Histogram h = intervals.get(i);
                double start = times.get(i)[0], length = times.get(i)[1];
                // Java takes start and end and prints end - start; pass what reproduces the length.
                w.outputIntervalHistogram(start, start + length, h, 1000.0);
                ByteBuffer buf = ByteBuffer.allocate(h.getNeededByteBufferCapacity());
                int n = h.encodeIntoCompressedByteBuffer(buf, 9);
                b64.println((h.getTag() == null ? "-" : h.getTag()) + " "
                        + Base64.getEncoder().encodeToString(Arrays.copyOf(buf.array(), n)));
            }
        }
        System.out.println(summarize(intervals));
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 2 && args[0].equals("read-hlog")) {
            readHlog(args[1]);
        } else if (args.length == 4 && args[0].equals("write")) {
            write(args[1], args[2], args[3]);
        } else {
            System.err.println("usage: Check.java read-hlog <file.hlog> | write <values.txt> <out.hlog> <out-b64.txt>");
            System.exit(2);
        }
    }
}
