/** Small formatting helpers the views share. */
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
export function ago(iso: string, now = Date.now()): string {
  const seconds = Math.max(0, Math.round((now - new Date(iso).getTime()) / 1000));
  if (isNaN(seconds)) {
    return iso;
  }
  if (seconds < 60) {
    return `${seconds} s ago`;
  }
  if (seconds < 3600) {
    return `${Math.floor(seconds / 60)} min ago`;
  }
  return `${Math.floor(seconds / 3600)} h ago`;
}

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) {
    return '';
  }
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
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

export const STATE_LABELS: { [state: string]: string } = {
  idle: 'idle',
  editing: 'editing a cell',
  running: 'running code',
  waiting: 'waiting for approval'
};
