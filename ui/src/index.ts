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
import { markAgentCells } from './cellmarks';
import { robotIcon } from './icons';
import { McpModel } from './model';
import { McpPanel, PANEL_ID } from './panel';
import { McpStatus } from './statusbar';
import { approvalTitle } from './views/policy';

namespace CommandIDs {
  export const open = 'jupyter-mcp-ext:open';
  export const stop = 'jupyter-mcp-ext:stop';
}

/** How much of the code to run a notification shows (the panel shows all of it). */
const NOTIFICATION_CODE_CHARS = 400;

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

    notebooks?.widgetAdded.connect((_, notebook) => markAgentCells(notebook));
    notebooks?.forEach(notebook => markAgentCells(notebook));

    const notified = new Map<string, string>();
    model.approvalRequested.connect((_, approval) => notified.set(approval.id, notify(model, approval)));
    model.approvalSettled.connect((_, id) => {
      Notification.dismiss(notified.get(id));
      notified.delete(id);
    });

    void model.refreshAll();
  }
};

/** An approval request as a JupyterLab notification with the panel's three choices. */
function notify(model: McpModel, approval: IApproval): string {
  const code = approval.code || approval.change || '';
  const shown = code.length > NOTIFICATION_CODE_CHARS ? `${code.slice(0, NOTIFICATION_CODE_CHARS)}…` : code;
  return Notification.warning(`${approvalTitle(approval)}:\n${shown}`, {
    autoClose: false,
    actions: [
      { label: 'Approve', displayType: 'accent', callback: () => void model.decide(approval.id, 'approve') },
      { label: 'Deny', displayType: 'warn', callback: () => void model.decide(approval.id, 'deny') },
      { label: 'Approve the rest of this turn', callback: () => void model.decide(approval.id, 'approve', true) }
    ]
  });
}

export default plugin;
