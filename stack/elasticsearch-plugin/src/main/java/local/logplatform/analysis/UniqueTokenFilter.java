package local.logplatform.analysis;

import java.io.IOException;

import org.apache.lucene.analysis.CharArraySet;
import org.apache.lucene.analysis.TokenFilter;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import org.apache.lucene.analysis.tokenattributes.PositionIncrementAttribute;

/**
 * Passes each distinct term once. Lucene's RemoveDuplicatesTokenFilter only compares tokens at one
 * position; the "unique" filter's default compares the whole stream, hence this small class.
 */
final class UniqueTokenFilter extends TokenFilter {
    private final CharTermAttribute term = addAttribute(CharTermAttribute.class);
    private final PositionIncrementAttribute positionIncrement = addAttribute(PositionIncrementAttribute.class);
    private final CharArraySet seen = new CharArraySet(8, false);
    private final boolean onlyOnSamePosition;

    UniqueTokenFilter(TokenStream input, boolean onlyOnSamePosition) {
        super(input);
        this.onlyOnSamePosition = onlyOnSamePosition;
    }

    @Override
    public boolean incrementToken() throws IOException {
        while (input.incrementToken()) {
            if (onlyOnSamePosition && positionIncrement.getPositionIncrement() > 0) {
                seen.clear();
            }
            char[] text = term.buffer();
            int length = term.length();
            if (!seen.contains(text, 0, length)) {
                // the set keeps the array it is given, and the attribute's buffer is reused
                char[] copy = new char[length];
                System.arraycopy(text, 0, copy, 0, length);
                seen.add(copy);
                return true;
            }
        }
        return false;
    }

    @Override
    public void reset() throws IOException {
        super.reset();
        seen.clear();
    }
}
