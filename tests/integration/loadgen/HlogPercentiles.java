// Reads an .hlog with HdrHistogram's own Java reader and prints, per tag, the total count and
// the value at the given percentile: "tag count value". Used by the integration tests to check
// that what llmload exports is what HdrHistogram's tools read.
import java.io.File;
import org.HdrHistogram.EncodableHistogram;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogReader;

public class HlogPercentiles {
  public static void main(String[] args) throws Exception {
    double percentile = Double.parseDouble(args[1]);
    HistogramLogReader reader = new HistogramLogReader(new File(args[0]));
    EncodableHistogram h;
    while ((h = reader.nextIntervalHistogram()) != null) {
      Histogram hist = (Histogram) h;
      System.out.println(hist.getTag() + " " + hist.getTotalCount() + " " + hist.getValueAtPercentile(percentile));
    }
  }
}
