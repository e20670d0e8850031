/**
 * The commands plugin: open the panel, stop every agent, and review from the keyboard (the next
 * agent change, Keep or Undo in the active cell), in the command palette under "MCP".
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';

import { robotIcon } from '../icons';
import { McpModel } from '../model';
import { PANEL_ID } from '../panel';
import { IMcpModel, IMcpReviews } from '../tokens';

export namespace CommandIDs {
  export const open = 'jupyter-mcp-ext:open';
  export const stop = 'jupyter-mcp-ext:stop';
  export const nextChange = 'jupyter-mcp-ext:next-change';
  export const keep = 'jupyter-mcp-ext:keep-cell';
  export const undo = 'jupyter-mcp-ext:undo-cell';
}

export const commandsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-mcp-ext:commands',
  description: 'MCP commands: open the panel, stop all agents, go to, keep or undo an agent change.',
  autoStart: true,
  requires: [IMcpModel],
  optional: [ICommandPalette, IMcpReviews, INotebookTracker],
  activate: (
    app: JupyterFrontEnd,
    model: McpModel,
    palette: ICommandPalette | null,
    reviews: IMcpReviews | null,
    notebooks: INotebookTracker | null
  ) => {
    const { trans } = model;
    const category = trans.__('MCP');
    app.commands.addCommand(CommandIDs.open, {
      label: trans.__('Open the MCP Panel'),
      icon: robotIcon,
      execute: () => app.shell.activateById(PANEL_ID)
    });
    app.commands.addCommand(CommandIDs.stop, {
      label: trans.__('Stop All MCP Agents'),
      caption: trans.__("Cancel every agent's calls, interrupt their runs and end their sessions"),
      execute: () => model.stop()
    });
    palette?.addItem({ command: CommandIDs.open, category });
    palette?.addItem({ command: CommandIDs.stop, category });
    if (!reviews || !notebooks) {
      return; // no notebooks here: nothing to review from the keyboard
    }

    const current = () => reviews.get(notebooks.currentWidget);
    // The active cell's agent change, if it has one waiting.
    const activeCell = () => {
      const marks = current();
      const id = notebooks.activeCell?.model.id;
      return marks && id && marks.pending.has(id) ? { marks, id } : null;
    };
    app.commands.addCommand(CommandIDs.nextChange, {
      label: trans.__('Go to the Next Agent Change'),
      isEnabled: () => !!current()?.pending.size,
      execute: () => current()?.next()
    });
    app.commands.addCommand(CommandIDs.keep, {
      label: trans.__("Keep the Agent's Change in This Cell"),
      isEnabled: () => !!activeCell(),
      execute: () => {
        const at = activeCell();
        return at?.marks.keep(at.id);
      }
    });
    app.commands.addCommand(CommandIDs.undo, {
      label: trans.__("Undo the Agent's Change in This Cell"),
      isEnabled: () => !!activeCell(),
      execute: () => {
        const at = activeCell();
        return at?.marks.undo(at.id);
      }
    });
    for (const command of [CommandIDs.nextChange, CommandIDs.keep, CommandIDs.undo]) {
      palette?.addItem({ command, category });
    }
    app.commands.addKeyBinding({
      command: CommandIDs.nextChange,
      keys: ['Alt ArrowDown'],
      selector: '.jp-Notebook.jp-mod-commandMode:not(.jp-mod-readWrite) :focus'
    });
  }
};
