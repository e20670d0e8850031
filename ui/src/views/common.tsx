/** Pieces every section uses: a section with a title, an agent's colour dot, a copy button. */
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

export function Section(props: {
  title: string;
  className: string;
  actions?: React.ReactNode;
  /** With `onToggle`, the title folds the section; folded, only the header shows. */
  expanded?: boolean;
  onToggle?: () => void;
  children: React.ReactNode;
}): JSX.Element {
  const folds = props.onToggle !== undefined;
  const expanded = props.expanded ?? true;
  return (
    <section className={`jp-mcp-Section ${props.className}`}>
      <header className="jp-mcp-SectionHeader">
        {folds ? (
          <h3>
            <button className="jp-mcp-Fold" aria-expanded={expanded} onClick={props.onToggle}>
              {expanded ? '▾' : '▸'} {props.title}
            </button>
          </h3>
        ) : (
          <h3>{props.title}</h3>
        )}
        {expanded && props.actions}
      </header>
      {expanded && props.children}
    </section>
  );
}

export function Swatch(props: { color?: string | null }): JSX.Element {
  return <span className="jp-mcp-Swatch" style={{ background: props.color || 'var(--jp-border-color1)' }} />;
}

/** Copies what `text()` gives (it may fetch the token first) and says so for two seconds. */
export function CopyButton(props: {
  text: () => Promise<string>;
  label?: string;
  title: string;
  trans: TranslationBundle;
}): JSX.Element {
  const [copied, setCopied] = React.useState(false);
  const copy = async () => {
    const text = await props.text();
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      // No clipboard permission (an insecure origin): the old way still works on a click.
      const area = document.createElement('textarea');
      area.value = text;
      document.body.appendChild(area);
      area.select();
      document.execCommand('copy');
      area.remove();
    }
    setCopied(true);
    setTimeout(() => setCopied(false), 2000);
  };
  return (
    <button className="jp-mcp-Button jp-mcp-CopyButton" title={props.title} onClick={() => void copy()}>
      {copied ? props.trans.__('Copied') : props.label || props.trans.__('Copy')}
    </button>
  );
}
