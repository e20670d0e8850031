/**
 * In the notebook: the cell an agent is editing or running shows the agent's name and colour, read
 * from the notebook's awareness (`mcp.cell_id` beside `user` in an agent's state, see
 * docs/api.md), so the person sees where it works without the panel open. What agents changed
 * that nobody reviewed yet is marked by `reviewmarks.ts`.
 */
import { NotebookPanel } from '@jupyterlab/notebook';
import { TranslationBundle } from '@jupyterlab/translation';

import { visibleText } from './views/visible';

/** What an agent's awareness state carries, as far as the marks need. */
interface IAgentPresence {
  user?: { display_name?: string; name?: string; color?: string };
  mcp?: { agent?: string; cell_id?: string | null; state?: string };
}

/** The part of y-protocols' Awareness used here. */
interface IAwarenessLike {
  getStates(): Map<number, IAgentPresence>;
  on(event: 'change', listener: () => void): void;
  off(event: 'change', listener: () => void): void;
}

const MARKED = 'jp-mcp-mod-agentCell';
const MARK = 'jp-mcp-CellMark';

/** Keeps the agent marks of one notebook panel in step with its awareness, until it closes. */
export function markAgentCells(panel: NotebookPanel, trans: TranslationBundle): void {
  const awareness = panel.context.model.sharedModel.awareness as unknown as IAwarenessLike | undefined;
  if (!awareness) {
    return; // no collaboration: no presence to show
  }
  const update = () => render(panel, awareness, trans);
  awareness.on('change', update);
  panel.content.model?.cells.changed.connect(update);
  panel.disposed.connect(() => awareness.off('change', update));
  update();
}

/** The agents working in each cell, by cell id. */
function agentsByCell(awareness: IAwarenessLike, trans: TranslationBundle): Map<string, { name: string; color: string; state: string }[]> {
  const cells = new Map<string, { name: string; color: string; state: string }[]>();
  awareness.getStates().forEach(state => {
    const cellId = state.mcp?.cell_id;
    if (!cellId || !state.user || !state.mcp || state.mcp.state === 'idle') {
      return;
    }
    const agents = cells.get(cellId) ?? [];
    agents.push({
      name: state.user.display_name || state.user.name || trans.__('agent'),
      color: state.user.color || 'var(--jp-brand-color1)',
      state: state.mcp.state || 'editing'
    });
    cells.set(cellId, agents);
  });
  return cells;
}

/** What an agent does in a cell, as its mark says it (the states the server sends). */
function stateLabel(state: string, trans: TranslationBundle): string {
  const labels: { [state: string]: string } = {
    editing: trans.__('editing'),
    running: trans.__('running'),
    waiting: trans.__('waiting')
  };
  return labels[state] ?? state;
}

function render(panel: NotebookPanel, awareness: IAwarenessLike, trans: TranslationBundle): void {
  const cells = agentsByCell(awareness, trans);
  for (const cell of panel.content.widgets) {
    cell.node.querySelectorAll(`:scope > .${MARK}`).forEach(node => node.remove());
    const agents = cells.get(cell.model.id);
    cell.toggleClass(MARKED, !!agents);
    if (!agents) {
      cell.node.style.removeProperty('--jp-mcp-agent-color');
      continue;
    }
    cell.node.style.setProperty('--jp-mcp-agent-color', agents[0].color);
    const mark = document.createElement('div');
    mark.className = MARK;
    mark.dataset.state = agents[0].state;
    for (const agent of agents) {
      const label = document.createElement('span');
      label.className = 'jp-mcp-CellMarkAgent';
      label.style.background = agent.color;
      label.textContent = `${visibleText(agent.name)} · ${stateLabel(agent.state, trans)}`;
      mark.appendChild(label);
    }
    cell.node.appendChild(mark);
  }
}
