/** The model plugin: one `McpModel` for the page, shared with the other plugins as `IMcpModel`. */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';

import { McpApi } from '../api';
import { McpModel, TRANSLATION_DOMAIN } from '../model';
import { IMcpModel } from '../tokens';

export const modelPlugin: JupyterFrontEndPlugin<McpModel> = {
  id: 'jupyter-mcp-ext:model',
  description: "The MCP model: the server's agents, journal, policy and approvals, for the other plugins.",
  autoStart: true,
  provides: IMcpModel,
  optional: [ITranslator],
  activate: (app: JupyterFrontEnd, translator: ITranslator | null): McpModel => {
    const trans = (translator ?? nullTranslator).load(TRANSLATION_DOMAIN);
    const model = new McpModel(
      new McpApi(app.serviceManager.serverSettings),
      app.serviceManager.events.stream,
      trans
    );
    void model.refreshAll();
    return model;
  }
};
