package local.logplatform.analysis;

import java.util.Map;

import org.elasticsearch.index.analysis.TokenFilterFactory;
import org.elasticsearch.index.analysis.TokenizerFactory;
import org.elasticsearch.indices.analysis.AnalysisModule.AnalysisProvider;
import org.elasticsearch.plugins.AnalysisPlugin;
import org.elasticsearch.plugins.Plugin;

/**
 * The security module creates its .security index with an "email" analyzer built from the
 * uax_url_email tokenizer and the pattern_capture and unique filters. Those live in the analysis-common
 * module, which the minimal distribution we run lacks (and which is not published on its own), so
 * without them no API key can be stored. This registers the three under the same names.
 */
public class SecurityIndexAnalysisPlugin extends Plugin implements AnalysisPlugin {

    @Override
    public Map<String, AnalysisProvider<TokenizerFactory>> getTokenizers() {
        return Map.of(UrlEmailTokenizerFactory.NAME, UrlEmailTokenizerFactory::new);
    }

    @Override
    public Map<String, AnalysisProvider<TokenFilterFactory>> getTokenFilters() {
        return Map.of(
            PatternCaptureTokenFilterFactory.NAME,
            AnalysisPlugin.requiresAnalysisSettings(PatternCaptureTokenFilterFactory::new),
            UniqueTokenFilterFactory.NAME,
            UniqueTokenFilterFactory::new
        );
    }
}
