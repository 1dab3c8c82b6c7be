// PM2 ecosystem file, as `pm2 init simple` writes it and people extend it.
module.exports = {
  apps: [
    {
      name: 'api',
      script: 'server.js',
      args: ['--port', '3000'],
      node_args: '--max-old-space-size=512',
      cwd: '/srv/api',
      env: {
        NODE_ENV: 'development',
        PORT: 3000, // a number: kept as written
      },
      env_production: { NODE_ENV: "production" },
      instances: 1,
      autorestart: true,
      max_restarts: 10,
      min_uptime: `5s`,
      restart_delay: 4000,
      kill_timeout: 5000,
      listen_timeout: 8000,
      wait_ready: true,
      out_file: '/var/log/api/out.log',
      error_file: '/var/log/api/err.log',
      merge_logs: true,
      max_memory_restart: '300M',
      watch: ['src'],
      ignore_watch: ['node_modules'],
    },
    /* a Python worker */
    {
      name: 'worker',
      script: 'worker.py',
      interpreter: 'python3',
      interpreter_args: '-u',
      args: "--queue 'high priority' --verbose",
      exp_backoff_restart_delay: 100,
      log_file: '/var/log/worker.log',
      cron_restart: '0 3 * * *',
    },
    {
      name: 'ui',
      script: 'npm',
      args: 'run start',
      instances: 4,
      exec_mode: 'cluster',
      autorestart: false,
      user: 'www-data',
    },
  ],
  deploy: {
    production: { user: 'deploy', host: 'example.com', ref: 'origin/main', repo: 'git@example.com:api.git', path: '/srv' },
  },
};
