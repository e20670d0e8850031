/** Connect: the endpoint's URL and a ready-to-paste set-up per agent, each with a copy button. */
import * as React from 'react';

import { McpModel } from '../model';
import { CopyButton, Section } from './common';

/** The set-ups the server offers (`snippets` in /api/mcp/info), and what each needs. */
export const SETUPS: { key: string; label: string; note: string }[] = [
  { key: 'claude', label: 'Claude Code', note: 'Run this in a terminal where Claude Code is installed.' },
  { key: 'codex', label: 'Codex', note: 'Add this to ~/.codex/config.toml.' },
  { key: 'cursor', label: 'Cursor', note: 'Add this to ~/.cursor/mcp.json (or .cursor/mcp.json in a project).' },
  { key: 'vscode', label: 'VS Code', note: 'Add this to .vscode/mcp.json in your workspace.' },
  {
    key: 'json',
    label: 'Other',
    note: 'Any MCP client with Streamable HTTP: this URL and an Authorization: Bearer header.'
  }
];

export function ConnectView(props: { model: McpModel }): JSX.Element {
  const { model } = props;
  const [chosen, choose] = React.useState('claude');
  // Open while no agent is connected; then folded out of the way unless the person opens it.
  const [folded, fold] = React.useState<boolean | null>(null);
  const info = model.info;
  const conflicts = info?.conflicts ?? [];
  const expanded = folded === null ? model.sessions.length === 0 || conflicts.length > 0 : !folded;
  const toggle = () => fold(expanded);
  if (!info) {
    return (
      <Section title="Connect" className="jp-mcp-Connect">
        <p className="jp-mcp-Empty">Asking the server for its MCP address…</p>
      </Section>
    );
  }
  const setups = SETUPS.filter(s => info.snippets[s.key] !== undefined);
  const setup = setups.find(s => s.key === chosen) ?? setups[0];
  const tokenButton = info.token_required ? (
    <button className="jp-mcp-Button jp-mcp-TokenToggle" onClick={() => void model.showToken(!model.tokenShown)}>
      {model.tokenShown ? 'Hide token' : 'Show token'}
    </button>
  ) : undefined;
  return (
    <Section
      title="Connect"
      className="jp-mcp-Connect"
      actions={tokenButton}
      expanded={expanded}
      onToggle={toggle}
    >
      {conflicts.map(c => (
        <p key={c.handler} className="jp-mcp-Message jp-mcp-Message-error jp-mcp-Conflict" role="alert">
          {c.message}
        </p>
      ))}
      <div className="jp-mcp-Url">
        <code className="jp-mcp-UrlText">{info.url}</code>
        <CopyButton title="Copy the MCP endpoint's URL" text={async () => info.url} />
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
          <p className="jp-mcp-Note">{setup.note}</p>
          <div className="jp-mcp-Snippet" data-setup={setup.key}>
            <CopyButton
              title={`Copy the ${setup.label} set-up, with the token`}
              text={() => model.snippetToCopy(setup.key)}
            />
            <pre>{model.snippet(setup.key)}</pre>
          </div>
        </>
      )}
    </Section>
  );
}
