/** Small formatting helpers the views share. */
import { TranslationBundle } from '@jupyterlab/translation';

import { IAgent } from '../api';

/** `09:12:01` in the person's time zone. */
export function clock(iso: string): string {
  const date = new Date(iso);
  return isNaN(date.getTime()) ? iso : date.toLocaleTimeString([], { hour12: false });
}

/** `09:12`, for the review marks' "changed this · <when>". */
export function hhmm(iso: string): string {
  const date = new Date(iso);
  const time = { hour: '2-digit', minute: '2-digit', hour12: false } as const;
  return isNaN(date.getTime()) ? iso : date.toLocaleTimeString([], time);
}

/** A small labelled button of the review marks and placeholders in the notebook. */
export function reviewButton(label: string, aria: string, onClick: () => void): HTMLButtonElement {
  const node = document.createElement('button');
  node.className = 'jp-mcp-Button jp-mcp-ReviewButton';
  node.type = 'button';
  node.textContent = label;
  node.setAttribute('aria-label', aria);
  node.addEventListener('click', onClick);
  return node;
}

/** `5 min ago`, for "since when". */
export function ago(trans: TranslationBundle, iso: string, now = Date.now()): string {
  const seconds = Math.max(0, Math.round((now - new Date(iso).getTime()) / 1000));
  if (isNaN(seconds)) {
    return iso;
  }
  if (seconds < 60) {
    return trans.__('%1 s ago', seconds);
  }
  if (seconds < 3600) {
    return trans.__('%1 min ago', Math.floor(seconds / 60));
  }
  return trans.__('%1 h ago', Math.floor(seconds / 3600));
}

export function duration(trans: TranslationBundle, ms: number | null | undefined): string {
  if (ms === null || ms === undefined) {
    return '';
  }
  return ms < 1000 ? trans.__('%1 ms', Math.round(ms)) : trans.__('%1 s', (ms / 1000).toFixed(1));
}

/** What the person calls the agent: the name the server gives it (its credential's, which the person
 * approved), else its client's title or name. */
export function agentName(agent: IAgent): string {
  return agent.name || agent.client.title || agent.client.name || agent.display_name;
}

/** What the agent's MCP client calls itself (its to choose), with the version. */
export function clientName(agent: IAgent): string {
  const name = agent.client.title || agent.client.name || agent.display_name;
  return agent.client.version ? `${name} ${agent.client.version}` : name;
}

/** An agent's session state in words (the states the server sends; another shows as it is). */
export function stateLabel(trans: TranslationBundle, state: string): string {
  const labels: { [state: string]: string } = {
    idle: trans.__('idle'),
    editing: trans.__('editing a cell'),
    running: trans.__('running code'),
    waiting: trans.__('waiting for approval')
  };
  return labels[state] ?? state;
}
