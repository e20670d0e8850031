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
          const { trans } = this._model;
          const title = waiting
            ? trans.__('An agent waits for your approval')
            : running
              ? trans.__('An agent is running code')
              : trans.__('%1 MCP agent(s) connected', agents);
          return (
            <div className="jp-mcp-StatusItem" title={title} onClick={this._onClick} data-agents={agents}>
              <robotIcon.react tag="span" className="jp-mcp-StatusIcon" />
              <span className="jp-mcp-StatusCount">{agents}</span>
              {waiting ? (
                <span className="jp-mcp-StatusMark jp-mcp-mod-waiting">{trans.__('approval?')}</span>
              ) : running ? (
                <span className="jp-mcp-StatusMark jp-mcp-mod-running">{trans.__('running')}</span>
              ) : null}
            </div>
          );
        }}
      </UseSignal>
    );
  }
}
