/** Policy: what agents may do (off, read-only, ask, full), and in `ask` the requests waiting. */
import * as React from 'react';

import { IApproval, POLICY_MODES, PolicyMode } from '../api';
import { McpModel } from '../model';
import { Section } from './common';
import { clock } from './format';
import { hasHidden, Visible, visibleText } from './visible';

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

/** What an approval asks in words: "Claude Code wants to run code in a.ipynb" (hidden characters shown). */
export function approvalTitle(approval: IApproval): string {
  const verb = { run: 'run code', delete: 'delete', write: 'change' }[approval.kind] ?? approval.tool;
  const where = approval.path ? ` in ${visibleText(approval.path)}` : '';
  return `${visibleText(approval.client)} wants to ${verb}${where}`;
}

/**
 * The "rest of this turn" choice in words, as the server scopes it: "Approve, and 10 more
 * execute_code in a.ipynb for 2 min"; null when the server offers none.
 */
export function turnLabel(approval: IApproval): string | null {
  const turn = approval.rest_of_turn;
  if (!turn || turn.calls <= 0) {
    return null;
  }
  const time = turn.seconds < 120 ? `${Math.round(turn.seconds)} s` : `${Math.round(turn.seconds / 60)} min`;
  const where = approval.path ? ` in ${visibleText(approval.path)}` : '';
  return `Approve, and ${turn.calls} more ${approval.tool}${where} for ${time}`;
}

/** Whether the person must be warned that what they approve holds characters they cannot see. */
export function hidesCharacters(approval: IApproval): boolean {
  return (
    !!approval.hidden_controls ||
    hasHidden(approval.code, true) ||
    hasHidden(approval.change, true) ||
    hasHidden(approval.path) ||
    hasHidden(approval.client)
  );
}

const HIDDEN_WARNING =
  'This contains invisible or control characters (shown as ⟨U+…⟩): what runs may differ from how ' +
  'the text would look elsewhere.';

function ApprovalCard(props: { approval: IApproval; model: McpModel }): JSX.Element {
  const { approval, model } = props;
  const decide = (decision: 'approve' | 'deny', rest = false) => void model.decide(approval.id, decision, rest);
  const turn = turnLabel(approval);
  return (
    <div className="jp-mcp-Approval" data-approval={approval.id}>
      <div className="jp-mcp-ApprovalTitle">
        {approvalTitle(approval)} <span className="jp-mcp-Time">{clock(approval.since)}</span>
      </div>
      {hidesCharacters(approval) && (
        <div className="jp-mcp-Warning jp-mcp-HiddenWarning" role="alert">
          {HIDDEN_WARNING}
        </div>
      )}
      <pre className="jp-mcp-ApprovalCode">
        <Visible text={approval.code || approval.change || approval.tool} code />
      </pre>
      <div className="jp-mcp-ApprovalActions">
        <button className="jp-mcp-Button jp-mcp-mod-accept" onClick={() => decide('approve')}>
          Approve
        </button>
        <button className="jp-mcp-Button jp-mcp-mod-warn" onClick={() => decide('deny')}>
          Deny
        </button>
        {turn && (
          <button
            className="jp-mcp-Button jp-mcp-TurnButton"
            title="Also let this agent's next calls of the same tool on the same path through without asking"
            onClick={() => decide('approve', true)}
          >
            {turn}
          </button>
        )}
      </div>
    </div>
  );
}
