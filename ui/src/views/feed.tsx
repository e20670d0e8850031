/** Activity: the journal, newest first; an entry that changed cells expands to its diff and Revert. */
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
  return (
    <Section title="Activity" className="jp-mcp-Feed">
      {model.entries.length === 0 ? (
        <p className="jp-mcp-Empty">No change or error yet (reads are not listed).</p>
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

function EntryRow(props: { entry: IEntry; model: McpModel; open: Opener }): JSX.Element {
  const { entry, model } = props;
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
        <span className={`jp-mcp-Outcome jp-mcp-Outcome-${entry.outcome}`}>{entry.outcome}</span>
        <span className="jp-mcp-Duration">{duration(entry.duration_ms)}</span>
        {entry.reverted && <span className="jp-mcp-RevertedMark">reverted</span>}
        {entry.reverted && entry.reverted_by && (
          <span className="jp-mcp-RevertedBy" title={`${entry.reverted_by.user} at ${entry.reverted_by.at}`}>
            by <Visible text={entry.reverted_by.name} />
          </span>
        )}
      </div>
      {entry.path && (
        <a className="jp-mcp-Link jp-mcp-Where" onClick={() => props.open(entry.path!, cell)} title="Open the notebook at this cell">
          <Visible text={entry.path} />
          {cell ? ' · cell ' : ''}
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
            {expanded ? 'Hide change' : 'Show change'}
          </button>
          )}
          {entry.revertible && !entry.reverted && (
            <button className="jp-mcp-Button jp-mcp-mod-warn jp-mcp-Revert" onClick={() => void model.revertEntry(entry.id)}>
              Revert
            </button>
          )}
        </div>
      )}
      {expanded && changes.map((change, n) => <ChangeDiff key={n} change={change} />)}
    </li>
  );
}
