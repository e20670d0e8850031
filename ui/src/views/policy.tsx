/** Policy: what agents may do (off, read-only, ask, full), and in `ask` the requests waiting. */
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { IApproval, POLICY_MODES, PolicyMode } from '../api';
import { McpModel } from '../model';
import { Section } from './common';
import { clock } from './format';
import { hasHidden, Visible, visibleText } from './visible';

function modeLabels(trans: TranslationBundle): { [mode in PolicyMode]: { label: string; title: string } } {
  return {
    off: { label: trans.__('Off'), title: trans.__('Agents can call no tool.') },
    'read-only': {
      label: trans.__('Read-only'),
      title: trans.__('Agents read notebooks; they cannot edit or run.')
    },
    ask: {
      label: trans.__('Ask'),
      title: trans.__('Agents edit; running code and deleting wait for your approval here.')
    },
    full: { label: trans.__('Full'), title: trans.__('Agents read, edit and run without asking.') }
  };
}

export function PolicyView(props: { model: McpModel }): JSX.Element {
  const { model } = props;
  const { trans } = model;
  const MODE_LABELS = modeLabels(trans);
  return (
    <Section title={trans.__('Policy')} className="jp-mcp-Policy">
      <div className="jp-mcp-Modes" role="radiogroup" aria-label={trans.__('What agents may do')}>
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
export function approvalTitle(trans: TranslationBundle, approval: IApproval): string {
  const client = visibleText(approval.client);
  const path = approval.path ? visibleText(approval.path) : '';
  const verbs: { [kind: string]: [string, string] } = {
    run: [trans.__('%1 wants to run code', client), trans.__('%1 wants to run code in %2', client, path)],
    delete: [trans.__('%1 wants to delete', client), trans.__('%1 wants to delete in %2', client, path)],
    write: [trans.__('%1 wants to change', client), trans.__('%1 wants to change in %2', client, path)]
  };
  const [plain, within] = verbs[approval.kind] ?? [
    trans.__('%1 wants to %2', client, approval.tool),
    trans.__('%1 wants to %2 in %3', client, approval.tool, path)
  ];
  return path ? within : plain;
}

/**
 * The "rest of this turn" choice in words, as the server scopes it: "Approve, and 10 more
 * execute_code in a.ipynb for 2 min"; null when the server offers none.
 */
export function turnLabel(trans: TranslationBundle, approval: IApproval): string | null {
  const turn = approval.rest_of_turn;
  if (!turn || turn.calls <= 0) {
    return null;
  }
  const time =
    turn.seconds < 120
      ? trans.__('%1 s', Math.round(turn.seconds))
      : trans.__('%1 min', Math.round(turn.seconds / 60));
  return approval.path
    ? trans.__('Approve, and %1 more %2 in %3 for %4', turn.calls, approval.tool, visibleText(approval.path), time)
    : trans.__('Approve, and %1 more %2 for %3', turn.calls, approval.tool, time);
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

function ApprovalCard(props: { approval: IApproval; model: McpModel }): JSX.Element {
  const { approval, model } = props;
  const { trans } = model;
  const decide = (decision: 'approve' | 'deny', rest = false) => void model.decide(approval.id, decision, rest);
  const turn = turnLabel(trans, approval);
  return (
    <div className="jp-mcp-Approval" data-approval={approval.id}>
      <div className="jp-mcp-ApprovalTitle">
        {approvalTitle(trans, approval)} <span className="jp-mcp-Time">{clock(approval.since)}</span>
      </div>
      {hidesCharacters(approval) && (
        <div className="jp-mcp-Warning jp-mcp-HiddenWarning" role="alert">
          {trans.__(
            'This contains invisible or control characters (shown as ⟨U+…⟩): what runs may differ from how the text would look elsewhere.'
          )}
        </div>
      )}
      <pre className="jp-mcp-ApprovalCode">
        <Visible text={approval.code || approval.change || approval.tool} code />
      </pre>
      <div className="jp-mcp-ApprovalActions">
        <button className="jp-mcp-Button jp-mcp-mod-accept" onClick={() => decide('approve')}>
          {trans.__('Approve')}
        </button>
        <button className="jp-mcp-Button jp-mcp-mod-warn" onClick={() => decide('deny')}>
          {trans.__('Deny')}
        </button>
        {turn && (
          <button
            className="jp-mcp-Button jp-mcp-TurnButton"
            title={trans.__("Also let this agent's next calls of the same tool on the same path through without asking")}
            onClick={() => decide('approve', true)}
          >
            {turn}
          </button>
        )}
      </div>
    </div>
  );
}
