/**
 * The notifications plugin: each approval request as a JupyterLab notification with the panel's
 * choices, unless the person turned them off in the settings (the panel and the status bar still
 * show what waits).
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import { ISettingRegistry } from '@jupyterlab/settingregistry';

import { IApproval } from '../api';
import { McpModel } from '../model';
import { PANEL_ID } from '../panel';
import { IMcpModel } from '../tokens';
import { approvalTitle, hidesCharacters, turnLabel } from '../views/policy';
import { visibleText } from '../views/visible';

const PLUGIN_ID = 'jupyter-mcp-ext:notifications';

/** JupyterLab cuts a notification's message at this many characters (`@jupyterlab/apputils`). */
const NOTIFICATION_MESSAGE_CHARS = 140;

export const notificationsPlugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'Approval requests as notifications, with Approve and Deny.',
  autoStart: true,
  requires: [IMcpModel],
  optional: [ISettingRegistry],
  activate: (app: JupyterFrontEnd, model: McpModel, registry: ISettingRegistry | null) => {
    let enabled = true;
    const notified = new Map<string, string>();
    model.approvalRequested.connect((_, approval) => {
      if (enabled) {
        notified.set(approval.id, notify(model, approval, () => app.shell.activateById(PANEL_ID)));
      }
    });
    model.approvalSettled.connect((_, id) => {
      Notification.dismiss(notified.get(id));
      notified.delete(id);
    });
    void registry?.load(PLUGIN_ID).then(
      settings => {
        const read = () => {
          enabled = settings.get('approvals').composite !== false;
          if (!enabled) {
            notified.forEach(id => Notification.dismiss(id));
            notified.clear();
          }
        };
        settings.changed.connect(read);
        read();
      },
      error => console.error(`jupyter-mcp-ext: the notifications' settings did not load: ${error}`)
    );
  }
};

/**
 * An approval request as a JupyterLab notification with the panel's choices, when what it asks fits
 * in one whole: JupyterLab cuts a notification's message at 140 characters, and a person must never
 * approve code they were shown part of. Longer code, or code with invisible characters, is approved
 * in the panel, where all of it shows with those characters marked; the notification leads there.
 */
function notify(model: McpModel, approval: IApproval, openPanel: () => void): string {
  const { trans } = model;
  const title = approvalTitle(trans, approval);
  const code = visibleText(approval.code || approval.change || '', true);
  const whole = `${title}:\n${code}`;
  const hidden = hidesCharacters(approval);
  const deny = {
    label: trans.__('Deny'),
    displayType: 'warn' as const,
    callback: () => void model.decide(approval.id, 'deny')
  };
  if (whole.length <= NOTIFICATION_MESSAGE_CHARS && !hidden) {
    const turn = turnLabel(trans, approval);
    return Notification.warning(whole, {
      autoClose: false,
      actions: [
        { label: trans.__('Approve'), displayType: 'accent', callback: () => void model.decide(approval.id, 'approve') },
        deny,
        ...(turn ? [{ label: turn, callback: () => void model.decide(approval.id, 'approve', true) }] : [])
      ]
    });
  }
  const why = hidden
    ? trans.__('⚠ it contains invisible or control characters')
    : trans.__('%1 characters, more than a notification shows', code.length.toLocaleString());
  return Notification.warning(trans.__('%1: %2. Review it in the MCP panel.', title, why), {
    autoClose: false,
    actions: [
      { label: trans.__('Review in the panel'), displayType: 'accent', callback: openPanel },
      deny
    ]
  });
}
