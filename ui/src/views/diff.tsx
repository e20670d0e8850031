/** A cell's change as a line diff: removed lines red, added green, as review tools show it. */
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { IChange } from '../api';
import { Visible } from './visible';

export type DiffLine = { op: ' ' | '-' | '+'; text: string };

/** The shortest edit between two texts, line by line (LCS; cells are small). */
export function diffLines(before: string, after: string): DiffLine[] {
  const a = before === '' ? [] : before.split('\n');
  const b = after === '' ? [] : after.split('\n');
  const common: number[][] = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      common[i][j] = a[i] === b[j] ? common[i + 1][j + 1] + 1 : Math.max(common[i + 1][j], common[i][j + 1]);
    }
  }
  const lines: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      lines.push({ op: ' ', text: a[i++] });
      j++;
    } else if (i < a.length && (j === b.length || common[i + 1][j] >= common[i][j + 1])) {
      lines.push({ op: '-', text: a[i++] });
    } else {
      lines.push({ op: '+', text: b[j++] });
    }
  }
  return lines;
}

function kindLabel(trans: TranslationBundle, kind: string): string {
  const labels: { [kind: string]: string } = {
    insert: trans.__('inserted'),
    update: trans.__('changed'),
    delete: trans.__('deleted'),
    move: trans.__('moved'),
    outputs: trans.__('outputs changed'),
    file: trans.__('file changed')
  };
  return labels[kind] ?? kind;
}

export function ChangeDiff(props: { change: IChange; trans: TranslationBundle }): JSX.Element {
  const { change, trans } = props;
  const lines = diffLines(change.before ?? '', change.after ?? '');
  return (
    <div className="jp-mcp-Diff" data-cell={change.cell_id}>
      <div className="jp-mcp-DiffTitle">
        {trans.__('cell')} <Visible text={change.cell_id} /> {kindLabel(trans, change.kind)}
      </div>
      {change.before === null && change.after === null ? null : (
        <pre className="jp-mcp-DiffBody">
          {lines.map((line, n) => (
            <div key={n} className={`jp-mcp-DiffLine jp-mcp-Diff-${DIFF_CLASSES[line.op]}`}>
              <span className="jp-mcp-DiffOp">{line.op}</span>
              {line.text ? <Visible text={line.text} code /> : ' '}
            </div>
          ))}
        </pre>
      )}
    </div>
  );
}

const DIFF_CLASSES = { ' ': 'same', '-': 'removed', '+': 'added' };
