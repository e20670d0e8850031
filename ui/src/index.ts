/**
 * jupyter-mcp-ext's JupyterLab plugin: wires the model to the shell (sidebar panel, status bar,
 * commands, notifications, notebook cell marks). State lives in `model.ts`, server calls in `api.ts`,
 * rendering in the views.
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, Notification } from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IStatusBar } from '@jupyterlab/statusbar';

import { IApproval, McpApi } from './api';
import { markAgentCells, reviewOf } from './cellmarks';
import { robotIcon } from './icons';
import { McpModel } from './model';
import { McpPanel, PANEL_ID } from './panel';
import { McpStatus } from './statusbar';
import { approvalTitle, hidesCharacters, turnLabel } from './views/policy';
import { visibleText } from './views/visible';

namespace CommandIDs {
  export const open = 'jupyter-mcp-ext:open';
  export const stop = 'jupyter-mcp-ext:stop';
  export const nextChange = 'jupyter-mcp-ext:next-change';
  export const keep = 'jupyter-mcp-ext:keep-cell';
  export const undo = 'jupyter-mcp-ext:undo-cell';
}

/** JupyterLab cuts a notification's message at this many characters (`@jupyterlab/apputils`). */
const NOTIFICATION_MESSAGE_CHARS = 140;

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-mcp-ext:plugin',
  description: 'The MCP panel: connect agents, watch them, review and revert, approve, stop.',
  autoStart: true,
  optional: [ICommandPalette, IStatusBar, INotebookTracker, IDocumentManager, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    palette: ICommandPalette | null,
    statusBar: IStatusBar | null,
    notebooks: INotebookTracker | null,
    docManager: IDocumentManager | null,
    restorer: ILayoutRestorer | null
  ) => {
    const model = new McpModel(new McpApi(app.serviceManager.serverSettings), app.serviceManager.events.stream);

    const openAt = async (path: string, cellId?: string | null) => {
      if (!docManager) {
        return;
      }
      docManager.openOrReveal(path);
      const panel = notebooks?.find(p => p.context.path === path);
      if (!panel || !cellId) {
        return;
      }
      await panel.context.ready;
      const cell = panel.content.widgets.find(c => c.model.id === cellId);
      if (cell) {
        panel.content.activeCellIndex = panel.content.widgets.indexOf(cell);
        await panel.content.scrollToCell(cell, 'center');
      }
    };

    const panel = new McpPanel(model, (path, cellId) => void openAt(path, cellId));
    app.shell.add(panel, 'left', { rank: 900 });
    restorer?.add(panel, PANEL_ID);

    app.commands.addCommand(CommandIDs.open, {
      label: 'Open the MCP Panel',
      icon: robotIcon,
      execute: () => app.shell.activateById(PANEL_ID)
    });
    app.commands.addCommand(CommandIDs.stop, {
      label: 'Stop All MCP Agents',
      caption: "Cancel every agent's calls, interrupt their runs and end their sessions",
      execute: () => model.stop()
    });
    palette?.addItem({ command: CommandIDs.open, category: 'MCP' });
    palette?.addItem({ command: CommandIDs.stop, category: 'MCP' });

    if (statusBar) {
      statusBar.registerStatusItem('jupyter-mcp-ext:status', {
        item: new McpStatus(model, () => app.shell.activateById(PANEL_ID)),
        align: 'left',
        rank: 50
      });
    }

    notebooks?.widgetAdded.connect((_, notebook) => markAgentCells(notebook, model));
    notebooks?.forEach(notebook => markAgentCells(notebook, model));

    // Review from the keyboard: the active cell's agent change, and the next one waiting.
    const activeCell = () => {
      const marks = reviewOf(notebooks?.currentWidget);
      const id = notebooks?.activeCell?.model.id;
      return marks && id && marks.pending.has(id) ? { marks, id } : null;
    };
    app.commands.addCommand(CommandIDs.nextChange, {
      label: 'Go to the Next Agent Change',
      isEnabled: () => !!reviewOf(notebooks?.currentWidget)?.pending.size,
      execute: () => reviewOf(notebooks?.currentWidget)?.next()
    });
    app.commands.addCommand(CommandIDs.keep, {
      label: "Keep the Agent's Change in This Cell",
      isEnabled: () => !!activeCell(),
      execute: () => {
        const at = activeCell();
        return at?.marks.keep(at.id);
      }
    });
    app.commands.addCommand(CommandIDs.undo, {
      label: "Undo the Agent's Change in This Cell",
      isEnabled: () => !!activeCell(),
      execute: () => {
        const at = activeCell();
        return at?.marks.undo(at.id);
      }
    });
    for (const command of [CommandIDs.nextChange, CommandIDs.keep, CommandIDs.undo]) {
      palette?.addItem({ command, category: 'MCP' });
    }
    app.commands.addKeyBinding({
      command: CommandIDs.nextChange,
      keys: ['Alt ArrowDown'],
      selector: '.jp-Notebook.jp-mod-commandMode:not(.jp-mod-readWrite) :focus'
    });

    const notified = new Map<string, string>();
    model.approvalRequested.connect((_, approval) =>
      notified.set(approval.id, notify(model, approval, () => app.shell.activateById(PANEL_ID)))
    );
    model.approvalSettled.connect((_, id) => {
      Notification.dismiss(notified.get(id));
      notified.delete(id);
    });

    void model.refreshAll();
  }
};

/**
 * An approval request as a JupyterLab notification with the panel's choices, when what it asks fits
 * in one whole: JupyterLab cuts a notification's message at 140 characters, and a person must never
 * approve code they were shown part of. Longer code, or code with invisible characters, is approved
 * in the panel, where all of it shows with those characters marked; the notification leads there.
 */
function notify(model: McpModel, approval: IApproval, openPanel: () => void): string {
  const title = approvalTitle(approval);
  const code = visibleText(approval.code || approval.change || '', true);
  const whole = `${title}:\n${code}`;
  const hidden = hidesCharacters(approval);
  const deny = { label: 'Deny', displayType: 'warn' as const, callback: () => void model.decide(approval.id, 'deny') };
  if (whole.length <= NOTIFICATION_MESSAGE_CHARS && !hidden) {
    const turn = turnLabel(approval);
    return Notification.warning(whole, {
      autoClose: false,
      actions: [
        { label: 'Approve', displayType: 'accent', callback: () => void model.decide(approval.id, 'approve') },
        deny,
        ...(turn ? [{ label: turn, callback: () => void model.decide(approval.id, 'approve', true) }] : [])
      ]
    });
  }
  const why = hidden
    ? '⚠ it contains invisible or control characters'
    : `${code.length.toLocaleString()} characters, more than a notification shows`;
  return Notification.warning(`${title}: ${why}. Review it in the MCP panel.`, {
    autoClose: false,
    actions: [{ label: 'Review in the panel', displayType: 'accent', callback: openPanel }, deny]
  });
}

export default plugin;
