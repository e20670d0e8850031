/** The MCP panel: Stop always on top, then what needs the person (policy, approvals), then the rest. */
import { ReactWidget, UseSignal } from '@jupyterlab/ui-components';
import * as React from 'react';

import { robotIcon } from './icons';
import { McpModel } from './model';
import { AgentsView } from './views/agents';
import { ConnectView } from './views/connect';
import { FeedView } from './views/feed';
import { PolicyView } from './views/policy';
import { Opener } from './views/sessions';
import { Translation } from './views/visible';

export const PANEL_ID = 'jupyter-mcp-ext-panel';

export class McpPanel extends ReactWidget {
  constructor(
    readonly model: McpModel,
    private readonly _open: Opener
  ) {
    super();
    this.id = PANEL_ID;
    this.addClass('jp-mcp-Panel');
    this.title.icon = robotIcon;
    this.title.caption = model.trans.__('MCP: agents in this server');
  }

  render(): JSX.Element {
    return (
      <UseSignal signal={this.model.changed}>
        {() => (
          <Translation.Provider value={this.model.trans}>
            <PanelBody model={this.model} open={this._open} />
          </Translation.Provider>
        )}
      </UseSignal>
    );
  }
}

function PanelBody(props: { model: McpModel; open: Opener }): JSX.Element {
  const { model } = props;
  const { trans } = model;
  return (
    <div className="jp-mcp-Body">
      <div className="jp-mcp-Top">
        <h2 className="jp-mcp-Title">{trans.__('MCP')}</h2>
        <button
          className="jp-mcp-Button jp-mcp-Stop"
          title={trans.__("Cancel every agent's calls, interrupt their runs and end their sessions")}
          onClick={() => void model.stop()}
        >
          {trans.__('Stop all agents')}
        </button>
      </div>
      {model.message && (
        <div className={`jp-mcp-Message jp-mcp-Message-${model.message.level}`} role="status">
          {model.message.text}
        </div>
      )}
      <PolicyView model={model} />
      <ConnectView model={model} />
      <AgentsView model={model} open={props.open} />
      <FeedView model={model} open={props.open} />
    </div>
  );
}
