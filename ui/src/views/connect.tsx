/**
 * Connect: the endpoint's URL and a ready-to-paste set-up per agent host. The set-ups carry no
 * credential: the host signs in (MCP's OAuth), and the person allows it in JupyterLab. A host or a
 * script that can only send a fixed header gets a named agent token minted here, shown once; while
 * it is on screen the file-based set-ups carry it. Claude Code's set-up (a command line) never does.
 * The person's own Jupyter token is not offered: it opens everything, with no policy.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { AGENT_POLICIES, AgentPolicy } from '../api';
import { McpModel, TOKEN_HOSTS } from '../model';
import { agentPolicyLabels } from './agents';
import { CopyButton, Section } from './common';
import { Visible } from './visible';

/** The set-ups the server offers (`snippets` in /api/mcp/info), and what each needs. */
export function setupsOf(trans: TranslationBundle): { key: string; label: string; note: string }[] {
  return [
    {
      key: 'claude',
      label: 'Claude Code',
      note: trans.__('Run this in a terminal; then /mcp in Claude Code signs in (you allow it in JupyterLab).')
    },
    {
      key: 'codex',
      label: 'Codex',
      note: trans.__('Add this to ~/.codex/config.toml, then run `codex mcp login jupyter`.')
    },
    {
      key: 'cursor',
      label: 'Cursor',
      note: trans.__('Add this to ~/.cursor/mcp.json (or .cursor/mcp.json in a project); Cursor signs in on first use.')
    },
    {
      key: 'vscode',
      label: 'VS Code',
      note: trans.__('Add this to .vscode/mcp.json; VS Code signs in on first use.')
    },
    {
      key: 'json',
      label: trans.__('Other'),
      note: trans.__('Any MCP client with Streamable HTTP: it signs in (OAuth), or sends a minted agent token.')
    }
  ];
}

export function ConnectView(props: { model: McpModel }): JSX.Element {
  const { model } = props;
  const { trans } = model;
  const [chosen, choose] = React.useState('claude');
  // Open while no agent is connected; then folded out of the way unless the person opens it.
  const [folded, fold] = React.useState<boolean | null>(null);
  const info = model.info;
  const conflicts = info?.conflicts ?? [];
  const expanded =
    folded === null ? model.sessions.length === 0 || conflicts.length > 0 || model.minted !== null : !folded;
  const toggle = () => fold(expanded);
  if (!info) {
    return (
      <Section title={trans.__('Connect')} className="jp-mcp-Connect">
        <p className="jp-mcp-Empty">{trans.__('Asking the server for its MCP address…')}</p>
      </Section>
    );
  }
  const setups = setupsOf(trans).filter(s => info.snippets[s.key] !== undefined);
  const setup = setups.find(s => s.key === chosen) ?? setups[0];
  const carries = model.minted !== null && TOKEN_HOSTS.includes(setup?.key ?? '');
  return (
    <Section title={trans.__('Connect')} className="jp-mcp-Connect" expanded={expanded} onToggle={toggle}>
      {conflicts.map(c => (
        <p key={c.handler} className="jp-mcp-Message jp-mcp-Message-error jp-mcp-Conflict" role="alert">
          {c.message}
        </p>
      ))}
      <div className="jp-mcp-Url">
        <code className="jp-mcp-UrlText">{info.url}</code>
        <CopyButton trans={trans} title={trans.__("Copy the MCP endpoint's URL")} text={async () => info.url} />
      </div>
      {setup && (
        <>
          <div className="jp-mcp-Tabs" role="tablist">
            {setups.map(s => (
              <button
                key={s.key}
                role="tab"
                aria-selected={s.key === setup.key}
                className={`jp-mcp-Tab${s.key === setup.key ? ' jp-mod-active' : ''}`}
                data-setup={s.key}
                onClick={() => choose(s.key)}
              >
                {s.label}
              </button>
            ))}
          </div>
          <p className="jp-mcp-Note">
            {setup.note}
            {model.minted !== null &&
              (carries
                ? ' ' + trans.__('It carries the agent token minted below.')
                : ' ' + trans.__("Claude Code's set-up never carries a token (it would stay on a command line)."))}
          </p>
          <div className="jp-mcp-Snippet" data-setup={setup.key} data-token={carries ? 'agent' : 'none'}>
            <CopyButton
              trans={trans}
              title={trans.__('Copy the %1 set-up', setup.label)}
              text={async () => model.snippet(setup.key)} />
            <pre>{model.snippet(setup.key)}</pre>
          </div>
        </>
      )}
      <MintForm model={model} />
    </Section>
  );
}

/** "Mint an agent token": for a host or script that can only send a fixed header. */
function MintForm(props: { model: McpModel }): JSX.Element {
  const { model } = props;
  const { trans } = model;
  const AGENT_POLICY_LABELS = agentPolicyLabels(trans);
  const [name, setName] = React.useState('');
  const [policy, setPolicy] = React.useState<AgentPolicy>('ask');
  const minted = model.minted;
  const submit = async (event: React.FormEvent) => {
    event.preventDefault();
    if (await model.mint(name, policy)) {
      setName('');
    }
  };
  return (
    <div className="jp-mcp-Mint">
      <h4 className="jp-mcp-MintTitle">{trans.__('Mint an agent token')}</h4>
      <p className="jp-mcp-Note">
        {trans.__(
          'For a host or script that can only send a fixed header. The token works at the MCP endpoint only, as an agent of its own with the policy you choose; Revoke it under Agents.'
        )}
      </p>
      <form className="jp-mcp-MintForm" onSubmit={event => void submit(event)}>
        <input
          className="jp-mcp-MintName"
          aria-label={trans.__('Agent name')}
          placeholder={trans.__('Agent name, e.g. Nightly report')}
          value={name}
          maxLength={100}
          onChange={event => setName(event.target.value)}
        />
        <select
          className="jp-mcp-MintPolicy"
          aria-label={trans.__('What the new agent may do')}
          value={policy}
          onChange={event => setPolicy(event.target.value as AgentPolicy)}
        >
          {AGENT_POLICIES.map(p => (
            <option key={p} value={p}>
              {AGENT_POLICY_LABELS[p]}
            </option>
          ))}
        </select>
        <button type="submit" className="jp-mcp-Button" disabled={!name.trim()}>
          {trans.__('Mint')}
        </button>
      </form>
      {minted && (
        <div className="jp-mcp-Minted" role="status">
          <p className="jp-mcp-Warning">
            {trans.__('The token of')} <Visible text={minted.agent.name} /> (
            {AGENT_POLICY_LABELS[minted.agent.policy]}),{' '}
            {trans.__('shown this once: copy it now, or use a set-up above while it is on screen.')}
          </p>
          <div className="jp-mcp-Url">
            <code className="jp-mcp-MintedToken">{minted.token}</code>
            <CopyButton trans={trans} title={trans.__('Copy the agent token')} text={async () => minted.token} />
          </div>
          <button className="jp-mcp-Button jp-mcp-MintDone" onClick={() => model.dismissMinted()}>
            {trans.__('Done (hide it)')}
          </button>
        </div>
      )}
    </div>
  );
}
