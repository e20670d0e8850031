/** A live session of an agent: what it does now, and "revert everything since ...". */
import * as React from 'react';

import { IAgent, IEntry } from '../api';
import { McpModel } from '../model';
import { Swatch } from './common';
import { agentName, ago, clientName, clock, stateLabel } from './format';
import { Visible } from './visible';

export type Opener = (path: string, cellId?: string | null) => void;

/** One live session, by its name (the agent's, or its client's), with "revert everything since". */
export function SessionRow(props: { agent: IAgent; entries: IEntry[]; model: McpModel; open: Opener }): JSX.Element {
  const { agent, entries } = props;
  const { trans } = props.model;
  // Oldest first; the first choice takes back the whole session.
  const choices = [...entries].reverse();
  const [since, setSince] = React.useState<number | null>(null);
  const from = choices.find(e => e.id === since) ?? choices[0];
  return (
    <li className="jp-mcp-Session" data-agent={agent.id} data-state={agent.state}>
      <div className="jp-mcp-SessionHead">
        <Swatch color={agent.color} />
        <span className="jp-mcp-AgentName">
          <Visible text={agent.display_name || agentName(agent)} />
        </span>
        <span className={`jp-mcp-State jp-mcp-State-${agent.state}`}>{stateLabel(trans, agent.state)}</span>
      </div>
      <div className="jp-mcp-SessionMeta">
        <span title={trans.__('Its MCP client')}>
          <Visible text={clientName(agent)} />
        </span>
        <span title={agent.since}>{trans.__('since %1', ago(trans, agent.since))}</span>
        {agent.path && (
          <a className="jp-mcp-Link" onClick={() => props.open(agent.path!, agent.cell_id)} title={trans.__('Open')}>
            <Visible text={agent.path} />
          </a>
        )}
      </div>
      {from && (
        <div className="jp-mcp-RevertSince">
          <button
            className="jp-mcp-Button jp-mcp-mod-warn"
            onClick={() => void props.model.revertSince(agent.id, from.id)}
          >
            {trans.__('Revert everything since')}
          </button>
          <select
            aria-label={trans.__('Revert from this change on')}
            value={from.id}
            onChange={event => setSince(Number(event.target.value))}
          >
            {choices.map((e, i) => (
              <option key={e.id} value={e.id}>
                {i === 0 ? trans.__('the start (%1)', clock(e.time)) : `${clock(e.time)} ${e.tool}`}
              </option>
            ))}
          </select>
        </div>
      )}
    </li>
  );
}
