/** Policy: what agents may do (off, read-only, ask, full), and in `ask` the requests waiting. */
import * as React from 'react';

import { IApproval, POLICY_MODES, PolicyMode } from '../api';
import { McpModel } from '../model';
import { Section } from './common';
import { clock } from './format';

const MODE_LABELS: { [mode in PolicyMode]: { label: string; title: string } } = {
  off: { label: 'Off', title: 'Agents can call no tool.' },
  'read-only': { label: 'Read-only', title: 'Agents read notebooks; they cannot edit or run.' },
  ask: { label: 'Ask', title: 'Agents edit; running code and deleting wait for your approval here.' },
  full: { label: 'Full', title: 'Agents read, edit and run without asking.' }
};

export function PolicyView(props: { model: McpModel }): JSX.Element {
  const { model } = props;
  return (
    <Section title="Policy" className="jp-mcp-Policy">
      <div className="jp-mcp-Modes" role="radiogroup" aria-label="What agents may do">
        {POLICY_MODES.map(mode => (
          <button
            key={mode}
            role="radio"
            aria-checked={model.policy === mode}
            title={MODE_LABELS[mode].title}
            data-mode={mode}
            className={`jp-mcp-Mode${model.policy === mode ? ' jp-mod-active' : ''}`}
            onClick={() => void model.setPolicy(mode)}
          >
            {MODE_LABELS[mode].label}
          </button>
        ))}
      </div>
      {model.policy && <p className="jp-mcp-Note">{MODE_LABELS[model.policy].title}</p>}
      {model.approvals.map(approval => (
        <ApprovalCard key={approval.id} approval={approval} model={model} />
      ))}
    </Section>
  );
}

/** What an approval asks in words: "Claude Code wants to run code in a.ipynb". */
export function approvalTitle(approval: IApproval): string {
  const verb = { run: 'run code', delete: 'delete', write: 'change' }[approval.kind] ?? approval.tool;
  return `${approval.client} wants to ${verb}${approval.path ? ` in ${approval.path}` : ''}`;
}

function ApprovalCard(props: { approval: IApproval; model: McpModel }): JSX.Element {
  const { approval, model } = props;
  const decide = (decision: 'approve' | 'deny', rest = false) => void model.decide(approval.id, decision, rest);
  return (
    <div className="jp-mcp-Approval" data-approval={approval.id}>
      <div className="jp-mcp-ApprovalTitle">
        {approvalTitle(approval)} <span className="jp-mcp-Time">{clock(approval.since)}</span>
      </div>
      <pre className="jp-mcp-ApprovalCode">{approval.code || approval.change || approval.tool}</pre>
      <div className="jp-mcp-ApprovalActions">
        <button className="jp-mcp-Button jp-mcp-mod-accept" onClick={() => decide('approve')}>
          Approve
        </button>
        <button className="jp-mcp-Button jp-mcp-mod-warn" onClick={() => decide('deny')}>
          Deny
        </button>
        <button className="jp-mcp-Button" onClick={() => decide('approve', true)}>
          Approve the rest of this turn
        </button>
      </div>
    </div>
  );
}
