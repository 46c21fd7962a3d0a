package local.logplatform.analysis;

import java.util.List;
import java.util.regex.Pattern;

import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.pattern.PatternCaptureGroupTokenFilter;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.env.Environment;
import org.elasticsearch.index.IndexSettings;
import org.elasticsearch.index.analysis.AbstractTokenFilterFactory;

/** "pattern_capture": one extra token per capture group of each pattern; "patterns" is required. */
final class PatternCaptureTokenFilterFactory extends AbstractTokenFilterFactory {
    static final String NAME = "pattern_capture";

    private final Pattern[] patterns;
    private final boolean preserveOriginal;

    PatternCaptureTokenFilterFactory(IndexSettings indexSettings, Environment environment, String name, Settings settings) {
        super(name, settings);
        List<String> regexes = settings.getAsList("patterns");
        if (regexes.isEmpty()) {
            throw new IllegalArgumentException("the [" + NAME + "] filter [" + name + "] needs a non-empty [patterns] list");
        }
        this.patterns = regexes.stream().map(Pattern::compile).toArray(Pattern[]::new);
        this.preserveOriginal = settings.getAsBoolean("preserve_original", true);
    }

    @Override
    public TokenStream create(TokenStream tokenStream) {
        return new PatternCaptureGroupTokenFilter(tokenStream, preserveOriginal, patterns);
    }
}
