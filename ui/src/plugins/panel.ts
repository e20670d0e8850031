/**
 * The panel plugin: the MCP panel in the left sidebar (in Jupyter Notebook 7, under View > Left
 * Sidebar); its links open a notebook at the cell an agent touched.
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { INotebookTracker } from '@jupyterlab/notebook';

import { McpModel } from '../model';
import { McpPanel, PANEL_ID } from '../panel';
import { IMcpModel } from '../tokens';

export const panelPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-mcp-ext:panel',
  description: 'The MCP panel: connect agents, watch them, review and revert, approve, stop.',
  autoStart: true,
  requires: [IMcpModel],
  optional: [INotebookTracker, IDocumentManager, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    model: McpModel,
    notebooks: INotebookTracker | null,
    docManager: IDocumentManager | null,
    restorer: ILayoutRestorer | null
  ) => {
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
  }
};
