/**
 * Agents: each agent the person let in (signed in through OAuth, or a minted token) with its client,
 * user, policy, created / last used, Revoke and a policy selector; its live sessions are listed under
 * it by name. Sessions that came with the person's own Jupyter token are grouped under that.
 * Every name here is the agent's (or its host's) to choose, so each goes through `Visible`.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { AGENT_POLICIES, AgentPolicy, IAgent, ICredential } from '../api';
import { McpModel } from '../model';
import { Section, Swatch } from './common';
import { ago } from './format';
import { Opener, SessionRow } from './sessions';
import { Visible } from './visible';

export function agentPolicyLabels(trans: TranslationBundle): { [policy in AgentPolicy]: string } {
  return {
    'read-only': trans.__('read-only'),
    ask: trans.__('ask before running'),
    full: trans.__('full')
  };
}

export function AgentsView(props: { model: McpModel; open: Opener }): JSX.Element {
  const { model } = props;
  const { trans } = model;
  const ofAgent = (id: string) =>
    model.sessions.filter(s => s.credential?.kind === 'agent' && s.credential.id === id);
  const known = new Set(model.agents.map(a => a.id));
  // Sessions of the person's own credential (token or login), by the label the server gives them.
  const people = new Map<string, IAgent[]>();
  for (const session of model.sessions) {
    const cred = session.credential;
    if (cred?.kind === 'agent' && known.has(cred.id)) {
      continue;
    }
    const label =
      cred?.kind === 'jupyter' ? cred.label : cred?.kind === 'agent'
          ? cred.name
          : trans.__('your Jupyter token: full access');
    people.set(label, [...(people.get(label) ?? []), session]);
  }
  const empty = model.agents.length === 0 && people.size === 0;
  return (
    <Section title={trans.__('Agents (%1)', model.agents.length + people.size)} className="jp-mcp-Agents">
      {empty ? (
        <p className="jp-mcp-Empty">{trans.__('No agent connected.')}</p>
      ) : (
        <ul className="jp-mcp-AgentList">
          {model.agents.map(credential => (
            <AgentCard key={credential.id} credential={credential} sessions={ofAgent(credential.id)} {...props} />
          ))}
          {[...people.entries()].map(([label, sessions]) => (
            <li key={label} className="jp-mcp-Agent jp-mcp-PersonToken" data-credential="jupyter">
              <div className="jp-mcp-AgentHead">
                <span className="jp-mcp-CredentialName">
                  <Visible text={label} />
                </span>
              </div>
              <p className="jp-mcp-Note">
                {trans.__(
                  'Not recommended: this opens everything you can, with no per-agent policy. Mint an agent token in Connect, or let the host sign in.'
                )}
              </p>
              <Sessions sessions={sessions} model={model} open={props.open} />
            </li>
          ))}
        </ul>
      )}
    </Section>
  );
}

function AgentCard(props: { credential: ICredential; sessions: IAgent[]; model: McpModel; open: Opener }): JSX.Element {
  const { credential, sessions, model } = props;
  const { trans } = model;
  const client = credential.client === 'token' ? trans.__('minted token') : credential.client;
  return (
    <li className="jp-mcp-Agent" data-credential={credential.id}>
      <div className="jp-mcp-AgentHead">
        <Swatch color={sessions[0]?.color} />
        <span className="jp-mcp-CredentialName">
          <Visible text={credential.name} />
        </span>
        {credential.name_verified === false && (
          <span
            className="jp-mcp-Unverified"
            title={trans.__('Its host named itself when it signed in: nobody could check this name')}
          >
            {trans.__('unverified')}
          </span>
        )}
        <select
          className="jp-mcp-AgentPolicy"
          aria-label={trans.__('What this agent may do')}
          title={trans.__("What this agent may do (the server's policy above stays a ceiling)")}
          value={credential.policy}
          onChange={event => void model.setAgentPolicy(credential.id, event.target.value as AgentPolicy)}
        >
          {AGENT_POLICIES.map(policy => (
            <option key={policy} value={policy}>
              {agentPolicyLabels(trans)[policy]}
            </option>
          ))}
        </select>
        <button
          className="jp-mcp-Button jp-mcp-mod-warn jp-mcp-Revoke"
          title={trans.__("Refuse this agent's token from now on and end its live sessions")}
          onClick={() => void model.revokeAgent(credential.id)}
        >
          {trans.__('Revoke')}
        </button>
      </div>
      <div className="jp-mcp-SessionMeta jp-mcp-AgentMeta">
        <span className="jp-mcp-AgentClient" title={trans.__('How it connected')}>
          <Visible text={client} />
        </span>
        <span title={trans.__('The Jupyter user it acts for')}>
          <Visible text={credential.user_display || credential.user} />
        </span>
        <span title={credential.created}>{trans.__('created %1', ago(trans, credential.created))}</span>
        <span className="jp-mcp-LastUsed" title={credential.last_used ?? ''}>
          {credential.last_used
            ? trans.__('last used %1', ago(trans, credential.last_used))
            : trans.__('never used')}
        </span>
      </div>
      <Sessions sessions={sessions} model={model} open={props.open} />
    </li>
  );
}

function Sessions(props: { sessions: IAgent[]; model: McpModel; open: Opener }): JSX.Element | null {
  const { model } = props;
  if (props.sessions.length === 0) {
    return null;
  }
  return (
    <ul className="jp-mcp-SessionList">
      {props.sessions.map(agent => (
        <SessionRow
          key={agent.id}
          agent={agent}
          entries={model.entries.filter(e => e.agent === agent.id && e.revertible && !e.reverted)}
          model={model}
          open={props.open}
        />
      ))}
    </ul>
  );
}
