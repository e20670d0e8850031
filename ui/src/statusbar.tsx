/** The status bar item: how many agents are connected, and a mark while one runs or waits. */
import { ReactWidget, UseSignal } from '@jupyterlab/ui-components';
import * as React from 'react';

import { robotIcon } from './icons';
import { McpModel } from './model';

export class McpStatus extends ReactWidget {
  constructor(
    private readonly _model: McpModel,
    private readonly _onClick: () => void
  ) {
    super();
    this.addClass('jp-mcp-Status');
  }

  render(): JSX.Element {
    return (
      <UseSignal signal={this._model.changed}>
        {() => {
          const { agents, running, waiting } = this._model.activity;
          const title = waiting
            ? 'An agent waits for your approval'
            : running
              ? 'An agent is running code'
              : `${agents} MCP agent(s) connected`;
          return (
            <div className="jp-mcp-StatusItem" title={title} onClick={this._onClick} data-agents={agents}>
              <robotIcon.react tag="span" className="jp-mcp-StatusIcon" />
              <span className="jp-mcp-StatusCount">{agents}</span>
              {waiting ? (
                <span className="jp-mcp-StatusMark jp-mcp-mod-waiting">approval?</span>
              ) : running ? (
                <span className="jp-mcp-StatusMark jp-mcp-mod-running">running</span>
              ) : null}
            </div>
          );
        }}
      </UseSignal>
    );
  }
}
