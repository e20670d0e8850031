/** Activity: the journal, newest first; an entry that changed cells expands to its diff and Revert. */
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { IEntry } from '../api';
import { McpModel } from '../model';
import { Section, Swatch } from './common';
import { ChangeDiff } from './diff';
import { clock, duration } from './format';
import { Opener } from './sessions';
import { Visible } from './visible';

export function FeedView(props: { model: McpModel; open: Opener }): JSX.Element {
  const { model } = props;
  const { trans } = model;
  return (
    <Section title={trans.__('Activity')} className="jp-mcp-Feed">
      {model.entries.length === 0 ? (
        <p className="jp-mcp-Empty">{trans.__('No change or error yet (reads are not listed).')}</p>
      ) : (
        <ol className="jp-mcp-EntryList">
          {model.entries.map(entry => (
            <EntryRow key={entry.id} entry={entry} model={model} open={props.open} />
          ))}
        </ol>
      )}
    </Section>
  );
}

/** A call's outcome in words (the outcomes the server records; another shows as it is). */
function outcomeLabel(trans: TranslationBundle, outcome: string): string {
  const labels: { [outcome: string]: string } = {
    ok: trans.__('ok'),
    error: trans.__('error'),
    denied: trans.__('denied')
  };
  return labels[outcome] ?? outcome;
}

function EntryRow(props: { entry: IEntry; model: McpModel; open: Opener }): JSX.Element {
  const { entry, model } = props;
  const { trans } = model;
  const [expanded, setExpanded] = React.useState(false);
  const changes = (entry.changes ?? []).filter(c => c.before !== null || c.after !== null);
  const agent = model.agent(entry.agent);
  const cell = entry.cell_ids?.[0] ?? null;
  const classes = ['jp-mcp-Entry', `jp-mcp-Entry-${entry.outcome}`];
  if (entry.reverted) {
    classes.push('jp-mcp-mod-reverted');
  }
  return (
    <li className={classes.join(' ')} data-entry={entry.id} data-tool={entry.tool} data-outcome={entry.outcome}>
      <div className="jp-mcp-EntryHead">
        <span className="jp-mcp-Time" title={entry.time}>
          {clock(entry.time)}
        </span>
        <Swatch color={agent?.color} />
        <span className="jp-mcp-EntryAgent">
          <Visible text={entry.client} />
        </span>
        <span className="jp-mcp-Tool">{entry.tool}</span>
        <span className={`jp-mcp-Outcome jp-mcp-Outcome-${entry.outcome}`}>{outcomeLabel(trans, entry.outcome)}</span>
        <span className="jp-mcp-Duration">{duration(trans, entry.duration_ms)}</span>
        {entry.reverted && <span className="jp-mcp-RevertedMark">{trans.__('reverted')}</span>}
        {entry.reverted && entry.reverted_by && (
          <span className="jp-mcp-RevertedBy" title={trans.__('%1 at %2', entry.reverted_by.user, entry.reverted_by.at)}
          >
            {trans.__('by')} <Visible text={entry.reverted_by.name} />
          </span>
        )}
      </div>
      {entry.path && (
        <a className="jp-mcp-Link jp-mcp-Where" onClick={() => props.open(entry.path!, cell)} title={trans.__('Open the notebook at this cell')}>
          <Visible text={entry.path} />
          {cell ? ` · ${trans.__('cell')} ` : ''}
          {cell && <Visible text={cell} />}
          {entry.cell_ids && entry.cell_ids.length > 1 ? ` (+${entry.cell_ids.length - 1})` : ''}
        </a>
      )}
      {entry.error && (
        <div className="jp-mcp-Error">
          <Visible text={entry.error} code />
        </div>
      )}
      {entry.note && (
        <div className="jp-mcp-Note">
          <Visible text={entry.note} code />
        </div>
      )}
      {(changes.length > 0 || (entry.revertible && !entry.reverted)) && (
        <div className="jp-mcp-EntryActions">
          {changes.length > 0 && (
          <button className="jp-mcp-Button jp-mcp-DiffToggle" aria-expanded={expanded} onClick={() => setExpanded(!expanded)}>
            {expanded ? trans.__('Hide change') : trans.__('Show change')}
          </button>
          )}
          {entry.revertible && !entry.reverted && (
            <button className="jp-mcp-Button jp-mcp-mod-warn jp-mcp-Revert" onClick={() => void model.revertEntry(entry.id)}>
              {trans.__('Revert')}
            </button>
          )}
        </div>
      )}
      {expanded && changes.map((change, n) => <ChangeDiff key={n} change={change} trans={trans} />)}
    </li>
  );
}
