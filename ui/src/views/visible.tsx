/**
 * Characters that change how text looks without showing themselves (bidi overrides such as
 * U+202E, zero-width marks, control codes) are shown as marked `⟨U+202E⟩` tokens wherever the panel
 * shows what an agent sent: code, paths, names, diffs, errors and notifications. Rendered as they
 * are, they make an approval card show something other than what runs. The set is the server's
 * (`jupyter_mcp_ext/people/hidden_chars.py`): format and control characters, line and paragraph
 * separators, Hangul fillers, U+034F, U+17B4-5 and the variation selectors supplement. In code, `\n`
 * and `\t` stay. (The server also flags stacked combining marks and runs of variation selectors.)
 */
import { nullTranslator, TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

/** The page's translation of the panel's strings, for the views that have no model at hand. */
export const Translation = React.createContext<TranslationBundle>(nullTranslator.load('jupyter-mcp-ext'));

const SET = '\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}\\u115F\\u1160\\u3164\\uFFA0\\u034F\\u17B4\\u17B5\\u{E0100}-\\u{E01EF}';
/** In code: every hidden character but line breaks and tabs. */
const IN_CODE = new RegExp(`(?![\\n\\t])[${SET}]`, 'gu');
/** In a name, a path or a one-line text: line breaks and tabs too. */
const IN_NAME = new RegExp(`[${SET}]`, 'gu');

function pattern(code: boolean): RegExp {
  const re = code ? IN_CODE : IN_NAME;
  re.lastIndex = 0;
  return re;
}

/** `⟨U+202E⟩` for one character. */
export function token(char: string): string {
  return `⟨U+${(char.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}⟩`;
}

/** Whether `text` holds a character a person would not see as it is. */
export function hasHidden(text: string | null | undefined, code = false): boolean {
  return !!text && pattern(code).test(text);
}

/** `text` with every hidden character as a token: for plain-text places (notifications, titles). */
export function visibleText(text: string, code = false): string {
  return text.replace(pattern(code), token);
}

/** `text` with every hidden character as a marked token, for the panel's views. */
export function Visible(props: { text: string | null | undefined; code?: boolean }): JSX.Element {
  const trans = React.useContext(Translation);
  const text = props.text ?? '';
  const re = pattern(props.code ?? false);
  const parts: React.ReactNode[] = [];
  let last = 0;
  for (const match of text.matchAll(re)) {
    const at = match.index ?? 0;
    if (at > last) {
      parts.push(text.slice(last, at));
    }
    parts.push(
      <span key={at} className="jp-mcp-Hidden" title={trans.__('An invisible or control character, shown by its code')}>
        {token(match[0])}
      </span>
    );
    last = at + match[0].length;
  }
  if (last < text.length) {
    parts.push(text.slice(last));
  }
  return <>{parts}</>;
}
