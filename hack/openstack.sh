#!/usr/bin/env bash
# Real OpenStack (Debian bookworm packages = OpenStack Zed) on 127.0.0.1 for tests.
#   full tier: Keystone (uwsgi :5000), Neutron ML2/OVS API only with router + extraroute + extraroute-atomic
#              (:9696), Placement (uwsgi :8778), Glance (:9292), Nova api/conductor/scheduler and two computes
#              (compute-1, compute-2) with fake.FakeDriver (:8774), Cinder api/scheduler/volume with the fake
#              logging driver (:8776), Octavia API (uwsgi :9876) + worker with Octavia's no-op
#              amphora/compute/network drivers; MariaDB on a unix socket, RabbitMQ on 127.0.0.1:5673.
#   fast tier: Keystone + Neutron (+ MariaDB) only.
# Usage: hack/openstack.sh start [fast|full]     recreate everything from scratch and start it (default: full)
#        hack/openstack.sh stop                  stop every process start recorded (by PID)
#        hack/openstack.sh stop-service NAME     stop one service (e.g. keystone, neutron-server, nova-api)
#        hack/openstack.sh start-service NAME    start it again with the same configuration and data
#        hack/openstack.sh status                list the services and whether they run
#        hack/openstack.sh check                 exit 0 when every service of the started tier runs
# State (configs, data, logs, PIDs) lives in $TESTENV_DIR/openstack (default .testenv/openstack in the repo).
# Writes $TESTENV_DIR/openstack/openrc (OS_* exports, admin on the cloud). Install the packages first with
# hack/install-deps.sh. Env: OPENSTACK_DB_DIR (MariaDB datadir; default under the state dir).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
OS_DIR=$TESTENV_DIR/openstack
ETC=$OS_DIR/etc RUN=$OS_DIR/state LOG=$OS_DIR/log BIN=$OS_DIR/bin
PY=/usr/bin/python3   # Debian's interpreter, the one the OpenStack libraries are installed for
DBDIR=${OPENSTACK_DB_DIR:-$RUN/mysql}
SOCK=$RUN/mysqld.sock
RABBIT='rabbit://guest:guest@127.0.0.1:5673/'
ALL_SERVICES="keystone neutron-server placement glance-api nova-api nova-conductor nova-scheduler nova-compute
  nova-compute-2 cinder-api cinder-volume cinder-scheduler octavia-api octavia-worker"

tier() { cat "$OS_DIR/tier" 2>/dev/null || echo full; }
full() { [ "$(tier)" = full ]; }
db() { echo "mysql+pymysql://os:os@localhost/$1?unix_socket=$SOCK&charset=utf8"; }
SQL() { mariadb --defaults-file="$ETC/mysql/my.cnf" -N -e "$1"; }
quiet() { # LOGFILE CMD...: run CMD with its output in LOGFILE; on failure show the tail
  local lg=$1; shift
  if ! "$@" > "$lg" 2>&1; then log "FAILED: $* (see $lg)"; tail -20 "$lg" >&2; return 1; fi
}
bg() { # NAME CMD...: start a server in the background, record its PID
  local name=$1; shift
  nohup "$@" < /dev/null > "$LOG/$name.out" 2>&1 &
  echo $! > "$RUN/$name.pid"
}

# ------------------------------------------------------------------ configuration files
write_configs() {
  mkdir -p "$ETC"/{keystone,neutron,placement,glance,nova,cinder,octavia,mysql,rabbitmq} "$BIN" "$LOG/rabbitmq" \
           "$RUN"/{keystone,neutron,nova,cinder,rabbitmq,lock,certs} "$RUN"/glance/{images,staging,tasks}
  # Every service authenticates to Keystone as the bootstrap admin (fine for a test cloud).
  local KSA="auth_type = password
auth_url = http://127.0.0.1:5000/v3
project_domain_name = Default
user_domain_name = Default
project_name = admin
username = admin
password = admin
region_name = RegionOne"
  local KSAT="[keystone_authtoken]
www_authenticate_uri = http://127.0.0.1:5000
$KSA"
  local COMMON="log_dir = $LOG
graceful_shutdown_timeout = 5"

  cat > "$ETC/mysql/my.cnf" <<CONF
[mysqld]
user = root
datadir = $DBDIR
socket = $SOCK
pid-file = $RUN/mysqld.pid
log-error = $LOG/mysqld.log
skip-networking
skip-name-resolve
max_connections = 1000
innodb_buffer_pool_size = 128M
innodb_log_file_size = 64M
innodb_flush_log_at_trx_commit = 0
innodb_doublewrite = 0
performance_schema = OFF
character-set-server = utf8mb4
collation-server = utf8mb4_general_ci
[client]
socket = $SOCK
user = root
CONF

  cat > "$ETC/rabbitmq/rabbitmq.conf" <<CONF
listeners.tcp.default = 127.0.0.1:5673
loopback_users.guest = true
log.console = false
log.file.level = warning
CONF
  echo '[].' > "$ETC/rabbitmq/enabled_plugins"
  cat > "$ETC/rabbitmq/env.sh" <<CONF
export HOME=$RUN/rabbitmq
export RABBITMQ_NODENAME=vitals@localhost
export RABBITMQ_CONFIG_FILE=$ETC/rabbitmq/rabbitmq.conf
export RABBITMQ_ENABLED_PLUGINS_FILE=$ETC/rabbitmq/enabled_plugins
export RABBITMQ_MNESIA_BASE=$RUN/rabbitmq/mnesia
export RABBITMQ_LOG_BASE=$LOG/rabbitmq
export RABBITMQ_PID_FILE=$RUN/rabbitmq/rabbit.pid
export RABBITMQ_DIST_PORT=25673
export ERL_EPMD_ADDRESS=127.0.0.1
export ERL_EPMD_PORT=14369
export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
CONF

  cat > "$ETC/keystone/keystone.conf" <<CONF
[DEFAULT]
$COMMON
log_file = keystone.log
[database]
connection = $(db keystone)
[fernet_tokens]
key_repository = $RUN/keystone/fernet-keys
[credential]
key_repository = $RUN/keystone/credential-keys
[token]
provider = fernet
CONF
  uwsgi_ini() { # NAME PORT WSGI-FILE ENV [PYARGV]
    cat <<CONF
[uwsgi]
plugins = python3
http-socket = 127.0.0.1:$2
wsgi-file = $3
${4:+env = $4}
${5:+pyargv = $5}
master = true
# worker processes of one thread each: these apps import eventlet/greenlet (oslo.concurrency does), and under
# uwsgi worker threads a greenlet is switched to from another thread ("greenlet.error: cannot switch to a
# different thread": the worker hangs) and the teardown of greenlet thread states at exit crashes the worker.
# Keystone, which every test package authenticates to, gets more workers to keep its concurrency.
processes = $([ "$1" = keystone ] && echo 4 || echo 2)
threads = 1
single-interpreter = true
lazy-apps = true
need-app = true
die-on-term = true
skip-atexit-teardown = true
worker-reload-mercy = 5
reload-mercy = 5
buffer-size = 65535
# clients reuse connections; uwsgi's http-socket does not do keep-alive
add-header = Connection: close
logto = $LOG/$1-uwsgi.log
CONF
  }
  uwsgi_ini keystone 5000 /usr/bin/keystone-wsgi-public "OS_KEYSTONE_CONFIG_FILES=$ETC/keystone/keystone.conf" > "$ETC/keystone/uwsgi.ini"

  cat > "$ETC/neutron/neutron.conf" <<CONF
[DEFAULT]
$COMMON
log_file = neutron-server.log
bind_host = 127.0.0.1
bind_port = 9696
core_plugin = ml2
# the L3 router plugin brings router, extraroute and extraroute-atomic
service_plugins = router
auth_strategy = keystone
allow_overlapping_ips = true
# two API workers: test packages call Neutron in parallel
api_workers = 2
rpc_workers = 0
rpc_state_report_workers = 0
# no agents: RPC stays in-process
transport_url = fake://
notify_nova_on_port_status_changes = false
notify_nova_on_port_data_changes = false
state_path = $RUN/neutron
[database]
connection = $(db neutron)
$KSAT
[oslo_concurrency]
lock_path = $RUN/lock
[oslo_policy]
policy_dirs = /etc/neutron/policy.d
[quotas]
# test packages run in parallel in the admin project: room for all of them (finite, so quota checks have a limit)
quota_router = 100
quota_network = 200
quota_subnet = 200
quota_port = 1000
quota_security_group = 200
quota_security_group_rule = 2000
CONF
  cat > "$ETC/neutron/ml2_conf.ini" <<'CONF'
[ml2]
type_drivers = flat,vlan,vxlan
tenant_network_types = vxlan
mechanism_drivers = openvswitch
extension_drivers = port_security
[ml2_type_flat]
flat_networks = external
[ml2_type_vlan]
network_vlan_ranges = physnet1:100:200
[ml2_type_vxlan]
vni_ranges = 1:1000
[securitygroup]
enable_security_group = true
CONF

  cat > "$ETC/placement/placement.conf" <<CONF
[DEFAULT]
$COMMON
log_file = placement.log
[api]
auth_strategy = keystone
[placement_database]
connection = $(db placement)
$KSAT
CONF
  uwsgi_ini placement 8778 /usr/bin/placement-api "OS_PLACEMENT_CONFIG_DIR=$ETC/placement" > "$ETC/placement/uwsgi.ini"

  cat > "$ETC/glance/glance-api.conf" <<CONF
[DEFAULT]
$COMMON
log_file = glance-api.log
bind_host = 127.0.0.1
bind_port = 9292
workers = 0
enabled_backends = fs:file
[database]
connection = $(db glance)
[glance_store]
default_backend = fs
[fs]
filesystem_store_datadir = $RUN/glance/images
[os_glance_staging_store]
filesystem_store_datadir = $RUN/glance/staging
[os_glance_tasks_store]
filesystem_store_datadir = $RUN/glance/tasks
[oslo_concurrency]
lock_path = $RUN/lock
[paste_deploy]
flavor = keystone
config_file = /etc/glance/glance-api-paste.ini
$KSAT
CONF

  # nova.conf is shared; nova-db.conf (DB URLs) is given to the controllers only, not to nova-compute.
  cat > "$ETC/nova/nova.conf" <<CONF
[DEFAULT]
$COMMON
transport_url = $RABBIT
my_ip = 127.0.0.1
host = compute-1
compute_driver = fake.FakeDriver
enabled_apis = osapi_compute
osapi_compute_listen = 127.0.0.1
osapi_compute_listen_port = 8774
osapi_compute_workers = 1
state_path = $RUN/nova
vif_plugging_is_fatal = false
vif_plugging_timeout = 0
[api]
auth_strategy = keystone
[conductor]
workers = 1
[scheduler]
workers = 1
[glance]
api_servers = http://127.0.0.1:9292
[quota]
# test packages boot servers in parallel in the admin project (the fake driver's hosts have room): the default
# 10 instances and 20 cores stopped the flight node tests
instances = 200
cores = 400
ram = 409600
[neutron]
$KSA
[placement]
$KSA
[cinder]
os_region_name = RegionOne
$KSAT
[oslo_concurrency]
lock_path = $RUN/lock
[oslo_messaging_notifications]
driver = noop
[wsgi]
api_paste_config = /etc/nova/api-paste.ini
CONF
  # A second compute host (the fake driver, as OpenStack's own CI runs several): servers of one project on two
  # hosts show two hostIds, as the node repair's host rule needs to be tried on the real cloud.
  cat > "$ETC/nova/nova-compute-2.conf" <<CONF
[DEFAULT]
host = compute-2
state_path = $RUN/nova-2
log_file = $LOG/nova-compute-2.log
CONF
  cat > "$ETC/nova/nova-db.conf" <<CONF
[api_database]
connection = $(db nova_api)
[database]
connection = $(db nova)
CONF

  cat > "$ETC/cinder/cinder.conf" <<CONF
[DEFAULT]
$COMMON
transport_url = $RABBIT
auth_strategy = keystone
my_ip = 127.0.0.1
host = cinder-1
osapi_volume_listen = 127.0.0.1
osapi_volume_listen_port = 8776
osapi_volume_workers = 1
state_path = $RUN/cinder
glance_api_servers = http://127.0.0.1:9292
enabled_backends = fake
api_paste_config = /etc/cinder/api-paste.ini
[fake]
# logs the LVM commands it would run instead of running them (ships in python3-cinder)
volume_driver = cinder.tests.fake_driver.FakeLoggingVolumeDriver
volume_backend_name = fake
[database]
connection = $(db cinder)
[oslo_concurrency]
lock_path = $RUN/lock
[oslo_messaging_notifications]
driver = noop
$KSAT
CONF

  cat > "$ETC/octavia/octavia.conf" <<CONF
[DEFAULT]
log_dir = $LOG
transport_url = $RABBIT
graceful_shutdown_timeout = 5
[api_settings]
bind_host = 127.0.0.1
bind_port = 9876
auth_strategy = keystone
api_base_uri = http://127.0.0.1:9876
# the real amphora provider (API -> RPC -> controller worker task flows) ...
enabled_provider_drivers = amphora:The Octavia Amphora driver (noop backends).,octavia:Alias of amphora.
default_provider_driver = amphora
[controller_worker]
# ... whose backends are Octavia's own no-op drivers: no VMs, no Neutron ports, no amphora agent
amphora_driver = amphora_noop_driver
compute_driver = compute_noop_driver
network_driver = network_noop_driver
image_driver = image_noop_driver
volume_driver = volume_noop_driver
loadbalancer_topology = SINGLE
amp_boot_network_list = 00000000-0000-0000-0000-000000000001
amp_flavor_id = 1
amp_image_tag = amphora
amp_secgroup_list = 00000000-0000-0000-0000-000000000002
client_ca = $RUN/certs/ca.pem
workers = 1
[task_flow]
jobboard_enabled = false
[certificates]
cert_generator = local_cert_generator
ca_certificate = $RUN/certs/ca.pem
ca_private_key = $RUN/certs/ca.key
storage_path = $RUN/certs
[database]
connection = $(db octavia)
[keystone_authtoken]
www_authenticate_uri = http://127.0.0.1:5000
$KSA
[service_auth]
$KSA
[oslo_messaging]
topic = octavia_prov
[oslo_concurrency]
lock_path = $RUN/lock
[oslo_messaging_notifications]
driver = noop
[health_manager]
bind_ip = 127.0.0.1
bind_port = 25555
heartbeat_key = insecure
CONF
  uwsgi_ini octavia-api 9876 /usr/bin/octavia-wsgi "" "--config-file $ETC/octavia/octavia.conf --log-file $LOG/octavia-api.log" > "$ETC/octavia/uwsgi.ini"

  # nova-compute / cinder-volume: the console scripts of the nova-compute / cinder-volume packages, without
  # those packages' hypervisor/LVM/iSCSI dependencies (libvirt, qemu, lvm2, tgt, open-iscsi).
  printf '#!/usr/bin/python3\nimport sys\nfrom nova.cmd.compute import main\nsys.exit(main())\n' > "$BIN/nova-compute"
  printf '#!/usr/bin/python3\nimport sys\nfrom cinder.cmd.volume import main\nsys.exit(main())\n' > "$BIN/cinder-volume"
  cat > "$BIN/register.py" <<'PYEOF'
#!/usr/bin/python3
"""Idempotently register services + endpoints (and a 'service' project) in Keystone. Args: service types."""
import sys
from keystoneauth1.identity import v3
from keystoneauth1 import session
from keystoneclient.v3 import client
ks = client.Client(session=session.Session(auth=v3.Password(
    auth_url="http://127.0.0.1:5000/v3", username="admin", password="admin",
    project_name="admin", user_domain_id="default", project_domain_id="default")))
want = {
    "network": ("neutron", "http://127.0.0.1:9696"),
    "image": ("glance", "http://127.0.0.1:9292"),
    "compute": ("nova", "http://127.0.0.1:8774/v2.1"),
    "placement": ("placement", "http://127.0.0.1:8778"),
    "volumev3": ("cinderv3", "http://127.0.0.1:8776/v3/%(project_id)s"),
    "block-storage": ("cinder", "http://127.0.0.1:8776/v3/%(project_id)s"),
    "load-balancer": ("octavia", "http://127.0.0.1:9876"),
}
if not ks.projects.list(name="service"):
    ks.projects.create("service", "default")
for stype in sys.argv[1:]:
    name, url = want[stype]
    svcs = ks.services.list(type=stype)
    svc = svcs[0] if svcs else ks.services.create(name=name, type=stype)
    have = {e.interface for e in ks.endpoints.list(service=svc)}
    for iface in ("public", "internal", "admin"):
        if iface not in have:
            ks.endpoints.create(svc, url, interface=iface, region="RegionOne")
PYEOF
  cat > "$BIN/resources.py" <<'PYEOF'
#!/usr/bin/python3
"""'nova': idempotently create flavor m1.tiny (id 1) and a 1 KiB active image 'cirros-fake'; print its id.
'cinder': wait (300 s max) until cinder-scheduler knows a backend pool."""
import sys, time
from keystoneauth1.identity import v3
from keystoneauth1 import session
s = session.Session(auth=v3.Password(
    auth_url="http://127.0.0.1:5000/v3", username="admin", password="admin",
    project_name="admin", user_domain_id="default", project_domain_id="default"))
if "nova" in sys.argv:
    nova = dict(service_type="compute", interface="public")
    if not any(f["name"] == "m1.tiny" for f in s.get("/flavors", endpoint_filter=nova).json()["flavors"]):
        s.post("/flavors", endpoint_filter=nova, json={"flavor": {"name": "m1.tiny", "id": "1", "ram": 512, "vcpus": 1, "disk": 1}})
    g = dict(service_type="image", interface="public")
    img = next((i for i in s.get("/v2/images?name=cirros-fake", endpoint_filter=g).json()["images"] if i["status"] == "active"), None)
    if img is None:
        img = s.post("/v2/images", endpoint_filter=g, json={"name": "cirros-fake", "disk_format": "raw",
                     "container_format": "bare", "visibility": "public"}).json()
        s.put("/v2/images/%s/file" % img["id"], endpoint_filter=g, data=b"\0" * 1024,
              headers={"Content-Type": "application/octet-stream"})
    print(img["id"])
if "cinder" in sys.argv:
    cinder = dict(service_type="volumev3", interface="public")
    deadline = time.time() + 300
    while not s.get("/scheduler-stats/get_pools", endpoint_filter=cinder).json()["pools"]:
        if time.time() > deadline:
            sys.exit("cinder-scheduler knows no pool after 300 s")
        time.sleep(0.5)
PYEOF
  chmod +x "$BIN"/*
}

KC() { echo "--config-file $ETC/keystone/keystone.conf"; }
NC() { echo "--config-file $ETC/neutron/neutron.conf --config-file $ETC/neutron/ml2_conf.ini"; }
NV() { echo "--config-file $ETC/nova/nova.conf --config-file $ETC/nova/nova-db.conf"; }

# ------------------------------------------------------------------ one service
# launch NAME: start one server process with the written configuration (no waiting).
launch() {
  case $1 in
    keystone)         bg keystone uwsgi --ini "$ETC/keystone/uwsgi.ini" ;;
    placement)        bg placement uwsgi --ini "$ETC/placement/uwsgi.ini" ;;
    octavia-api)      bg octavia-api uwsgi --ini "$ETC/octavia/uwsgi.ini" ;;
    neutron-server)   bg neutron-server neutron-server $(NC) ;;
    glance-api)       bg glance-api glance-api --config-file "$ETC/glance/glance-api.conf" ;;
    nova-api|nova-conductor|nova-scheduler) bg "$1" "$1" $(NV) ;;
    nova-compute)     bg nova-compute "$BIN/nova-compute" --config-file "$ETC/nova/nova.conf" ;;
    nova-compute-2)   bg nova-compute-2 "$BIN/nova-compute" --config-file "$ETC/nova/nova.conf" --config-file "$ETC/nova/nova-compute-2.conf" ;;
    cinder-api|cinder-scheduler) bg "$1" "$1" --config-file "$ETC/cinder/cinder.conf" ;;
    cinder-volume)    bg cinder-volume "$BIN/cinder-volume" --config-file "$ETC/cinder/cinder.conf" ;;
    octavia-worker)   bg octavia-worker octavia-worker --config-file "$ETC/octavia/octavia.conf" --log-file "$LOG/octavia-worker.log" ;;
    *) die "unknown service $1 (one of: $ALL_SERVICES)" ;;
  esac
}
# url_of NAME: the URL that answers when NAME is up (empty for services without an API).
url_of() {
  case $1 in
    keystone) echo http://127.0.0.1:5000/v3 ;;
    neutron-server) echo http://127.0.0.1:9696/ ;;
    placement) echo http://127.0.0.1:8778/ ;;
    glance-api) echo http://127.0.0.1:9292/ ;;
    nova-api) echo http://127.0.0.1:8774/ ;;
    cinder-api) echo http://127.0.0.1:8776/ ;;
    octavia-api) echo http://127.0.0.1:9876/ ;;
  esac
}

# ------------------------------------------------------------------ start / stop everything
start_all() {
  local T J1 J2 J3= J4= J5 J6= J7= REG img
  stop_all >/dev/null 2>&1 || true
  rm -rf "$RUN" "$LOG" "$DBDIR" "$OS_DIR/openrc"
  mkdir -p "$OS_DIR"; echo "$1" > "$OS_DIR/tier"
  for b in keystone-manage uwsgi mariadbd neutron-server; do command -v $b >/dev/null || die "missing $b: run hack/install-deps.sh"; done
  write_configs

  # MariaDB (+ RabbitMQ booting meanwhile)
  if full; then
    ( . "$ETC/rabbitmq/env.sh"; cd "$RUN/rabbitmq"; nohup /usr/lib/rabbitmq/bin/rabbitmq-server < /dev/null > "$LOG/rabbitmq/server.out" 2>&1 & echo $! > "$RUN/rabbitmq-server.pid" )
  fi
  quiet "$LOG/mariadb-install-db.log" mariadb-install-db --defaults-file="$ETC/mysql/my.cnf" --auth-root-authentication-method=normal --skip-test-db
  nohup mariadbd --defaults-file="$ETC/mysql/my.cnf" < /dev/null > /dev/null 2>&1 &
  echo $! > "$RUN/mariadb.pid"
  for i in $(seq 1 300); do mariadb-admin --defaults-file="$ETC/mysql/my.cnf" ping >/dev/null 2>&1 && break; sleep 0.1; done
  SQL "CREATE USER 'os'@'localhost' IDENTIFIED BY 'os'; GRANT ALL ON *.* TO 'os'@'localhost';
       CREATE DATABASE keystone; CREATE DATABASE neutron; CREATE DATABASE placement; CREATE DATABASE glance;
       CREATE DATABASE nova_api; CREATE DATABASE nova; CREATE DATABASE nova_cell0; CREATE DATABASE cinder;
       CREATE DATABASE octavia;"
  log "mariadb up"

  # schemas, in parallel; each API starts as soon as its schema exists
  (
    quiet "$LOG/keystone-db_sync.log" keystone-manage $(KC) db_sync
    quiet "$LOG/keystone-fernet.log" keystone-manage $(KC) fernet_setup --keystone-user root --keystone-group root
    quiet "$LOG/keystone-credential.log" keystone-manage $(KC) credential_setup --keystone-user root --keystone-group root
    quiet "$LOG/keystone-bootstrap.log" keystone-manage $(KC) bootstrap --bootstrap-password admin \
      --bootstrap-username admin --bootstrap-project-name admin --bootstrap-role-name admin \
      --bootstrap-service-name keystone --bootstrap-region-id RegionOne \
      --bootstrap-admin-url http://127.0.0.1:5000/v3 --bootstrap-public-url http://127.0.0.1:5000/v3 \
      --bootstrap-internal-url http://127.0.0.1:5000/v3
    launch keystone
    log "keystone schema + bootstrap done, started"
  ) & J1=$!
  ( quiet "$LOG/neutron-db-manage.log" neutron-db-manage $(NC) upgrade heads; log "neutron schema done" ) & J2=$!
  if full; then
    (
      quiet "$LOG/glance-db-sync.log" glance-manage --config-file "$ETC/glance/glance-api.conf" db_sync
      launch glance-api
      quiet "$LOG/placement-db-sync.log" placement-manage --config-file "$ETC/placement/placement.conf" db sync
      launch placement
      quiet "$LOG/nova-api_db-sync.log" nova-manage $(NV) api_db sync
      quiet "$LOG/nova-map_cell0.log" nova-manage $(NV) cell_v2 map_cell0 --database_connection "$(db nova_cell0)"
      quiet "$LOG/nova-create_cell.log" nova-manage $(NV) cell_v2 create_cell --name cell1
      quiet "$LOG/nova-db-sync.log" nova-manage $(NV) db sync
      log "glance/placement/nova schemas done"
    ) & J3=$!
    ( quiet "$LOG/cinder-db-sync.log" cinder-manage --config-file "$ETC/cinder/cinder.conf" db sync; log "cinder schema done" ) & J4=$!
    (
      openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj /CN=vitals-octavia-test-ca \
        -keyout "$RUN/certs/ca.key" -out "$RUN/certs/ca.pem" >/dev/null 2>&1
      quiet "$LOG/octavia-db-manage.log" octavia-db-manage --config-file "$ETC/octavia/octavia.conf" upgrade head
      log "octavia schema done"
    ) & J7=$!
  fi
  wait $J1
  wait_http keystone http://127.0.0.1:5000/v3 300
  REG="network"
  full && REG="$REG image compute placement volumev3 block-storage load-balancer"
  ( quiet "$LOG/register.log" $PY "$BIN/register.py" $REG; log "catalog registered: $REG" ) & J5=$!

  wait $J2
  # Pretend an OVS agent lives on each nova compute host (heartbeat pinned in 2099) so that ML2's real
  # openvswitch mechanism driver binds the ports nova creates (vif_type=ovs); no agent process exists.
  for h in compute-1 compute-2; do
  SQL "INSERT INTO neutron.agents (id, agent_type, \`binary\`, topic, host, admin_state_up, created_at, started_at,
       heartbeat_timestamp, description, configurations, \`load\`, availability_zone)
       VALUES (UUID(), 'Open vSwitch agent', 'neutron-openvswitch-agent', 'N/A', '$h', 1, UTC_TIMESTAMP(),
       UTC_TIMESTAMP(), '2099-01-01 00:00:00', 'fake: no process, heartbeat pinned by hack/openstack.sh',
       '{\"bridge_mappings\": {\"physnet1\": \"br-eth1\", \"external\": \"br-ex\"}, \"tunnel_types\": [\"vxlan\"], \"ovs_hybrid_plug\": false, \"datapath_type\": \"system\", \"integration_bridge\": \"br-int\", \"tunneling_ip\": \"127.0.0.1\", \"devices\": 0}',
       0, 'nova')"
  done
  launch neutron-server
  if full; then
    for i in $(seq 1 1200); do (echo > /dev/tcp/127.0.0.1/5673) 2>/dev/null && break; sleep 0.25; done
    (echo > /dev/tcp/127.0.0.1/5673) 2>/dev/null || die "rabbitmq did not start; see $LOG/rabbitmq"
    log "rabbitmq answers"
    wait $J3
    launch nova-api; launch nova-conductor; launch nova-scheduler; launch nova-compute; launch nova-compute-2
    wait $J4
    launch cinder-api; launch cinder-volume
    # cinder-scheduler asks the volume services for their capabilities once, when it starts; a cinder-volume
    # that is not consuming yet misses that and only reports ~60 s later. So start the scheduler after it is.
    ( for i in $(seq 1 1200); do
        grep -q 'Driver post RPC initialization completed' "$LOG/cinder-volume.log" 2>/dev/null && break; sleep 0.25
      done
      launch cinder-scheduler ) & J6=$!
    wait $J7
    launch octavia-api; launch octavia-worker
  fi
  wait $J5

  # readiness
  wait_http neutron http://127.0.0.1:9696/ 300
  check_extensions
  if full; then
    wait_http placement http://127.0.0.1:8778/ 300
    wait_http glance http://127.0.0.1:9292/ 300
    wait_http nova-api http://127.0.0.1:8774/ 300
    for i in $(seq 1 1200); do [ "$(SQL "SELECT COUNT(*) FROM nova.compute_nodes WHERE deleted=0")" -ge 2 ] && break; sleep 0.25; done
    quiet "$LOG/nova-discover_hosts.log" nova-manage $(NV) cell_v2 discover_hosts
    log "nova-compute (compute-1, compute-2) registered and mapped to cell1"
    img=$($PY "$BIN/resources.py" nova)
    log "flavor m1.tiny + image cirros-fake ($img) ready"
    wait_http cinder-api http://127.0.0.1:8776/ 300
    wait $J6
    quiet "$LOG/cinder-pools.log" $PY "$BIN/resources.py" cinder
    log "cinder-volume backend pool known to cinder-scheduler"
    wait_http octavia-api http://127.0.0.1:9876/ 300 200
    for i in $(seq 1 1200); do grep -qi 'Starting consumer\|Starting 1 workers\|start consumer' "$LOG/octavia-worker.log" 2>/dev/null && break; sleep 0.25; done
    log "octavia-worker started"
  fi

  cat > "$OS_DIR/openrc" <<RC
export OS_AUTH_URL=http://127.0.0.1:5000/v3
export OS_IDENTITY_API_VERSION=3
export OS_USERNAME=admin
export OS_PASSWORD=admin
export OS_PROJECT_NAME=admin
export OS_USER_DOMAIN_NAME=Default
export OS_PROJECT_DOMAIN_NAME=Default
export OS_DOMAIN_NAME=Default
export OS_REGION_NAME=RegionOne
RC
  log "OpenStack ($1 tier) up; env in $OS_DIR/openrc"
}

# check_extensions: Neutron must offer what Vitals' route controllers use. Retries for up to 5 minutes: on a
# loaded machine the first token and the first Neutron request can take tens of seconds.
check_extensions() {
  local tok ext e missing deadline=$((SECONDS + 300))
  while :; do
    tok=$(curl -si -m 60 -H 'Content-Type: application/json' http://127.0.0.1:5000/v3/auth/tokens -d '{"auth":{"identity":{"methods":["password"],"password":{"user":{"name":"admin","domain":{"name":"Default"},"password":"admin"}}},"scope":{"project":{"name":"admin","domain":{"name":"Default"}}}}}' 2>/dev/null \
      | awk -F': ' 'tolower($1)=="x-subject-token"{print $2}' | tr -d '\r' || true)
    ext=""
    [ -n "$tok" ] && ext=$(curl -s -m 60 -H "X-Auth-Token: $tok" http://127.0.0.1:9696/v2.0/extensions 2>/dev/null || true)
    missing=""
    for e in router extraroute extraroute-atomic; do
      grep -q "\"alias\": *\"$e\"" <<<"$ext" || missing="$missing $e"
    done
    [ -z "$missing" ] && break
    if [ $SECONDS -ge $deadline ]; then
      log "GET /v2.0/extensions answered: ${ext:0:300}"
      die "neutron lacks extensions:$missing"
    fi
    sleep 2
  done
  log "neutron extensions present: router extraroute extraroute-atomic"
}

stop_all() {
  local group=() name
  for name in $ALL_SERVICES; do
    [ -f "$RUN/$name.pid" ] && group+=("$name=$(cat "$RUN/$name.pid")") && rm -f "$RUN/$name.pid"
  done
  [ ${#group[@]} -gt 0 ] && stop_pids 15 "${group[@]}"
  group=()
  [ -f "$RUN/rabbitmq/rabbit.pid" ] && group+=("rabbitmq=$(cat "$RUN/rabbitmq/rabbit.pid")") && rm -f "$RUN/rabbitmq/rabbit.pid"
  [ -f "$RUN/rabbitmq-server.pid" ] && group+=("rabbitmq-server-script=$(cat "$RUN/rabbitmq-server.pid")") && rm -f "$RUN/rabbitmq-server.pid"
  [ -f "$RUN/mariadb.pid" ] && group+=("mariadb=$(cat "$RUN/mariadb.pid")") && rm -f "$RUN/mariadb.pid"
  [ ${#group[@]} -gt 0 ] && stop_pids 15 "${group[@]}"
  # epmd was spawned by our Erlang node on its private port 14369: find it by that listener.
  local epmd
  epmd=$(ss -ltnpH 'sport = :14369' 2>/dev/null | grep -o 'epmd",pid=[0-9]*' | head -1 | cut -d= -f2)
  [ -n "$epmd" ] && stop_pids 5 "epmd=$epmd"
  # Whatever still runs from the state directory (a worker whose pid file was lost or overwritten, a service
  # launched while a start was cut short): every process of ours names its configuration or log there.
  local p stray=()
  for p in $(pgrep -f -- "$OS_DIR/" 2>/dev/null || true); do
    [ "$p" = $$ ] || [ "$p" = "$BASHPID" ] || stray+=("stray=$p")
  done
  [ ${#stray[@]} -gt 0 ] && stop_pids 5 "${stray[@]}"
  return 0
}

stop_service() {
  local f=$RUN/$1.pid
  [[ " $(echo $ALL_SERVICES) " == *" $1 "* ]] || die "unknown service $1 (one of: $(echo $ALL_SERVICES))"
  [ -f "$f" ] || { log "$1 is not running"; return 0; }
  stop_pidfile 15 "$1" "$f"
}

start_service() {
  local f=$RUN/$1.pid u
  [ -f "$ETC/keystone/keystone.conf" ] || die "nothing configured: run $0 start first"
  if [ -f "$f" ] && alive "$(cat "$f")"; then log "$1 already running (pid $(cat "$f"))"; return 0; fi
  launch "$1"
  u=$(url_of "$1")
  [ -z "$u" ] || wait_http "$1" "$u" 300
}

status() {
  local name p names="keystone neutron-server mariadb"
  full && names="$ALL_SERVICES mariadb rabbitmq-server"
  echo "tier: $(tier)"
  for name in $names; do
    p=$(cat "$RUN/$name.pid" 2>/dev/null || true)
    if alive "$p"; then echo "$name running (pid $p)"; else echo "$name stopped"; fi
  done
}

# check: every process of the running tier is alive (exit 1 otherwise).
check() {
  local name p names="keystone neutron-server mariadb"
  [ -f "$OS_DIR/openrc" ] || return 1
  full && names="$ALL_SERVICES mariadb rabbitmq-server"
  for name in $names; do
    p=$(cat "$RUN/$name.pid" 2>/dev/null || true)
    alive "$p" || { log "$name is not running"; return 1; }
  done
}

case ${1:-} in
  check) check ;;
  start)
    t=${2:-full}; [ "$t" = fast ] || [ "$t" = full ] || die "tier must be fast or full, not $t"
    step "start OpenStack ($t tier)" start_all "$t" ;;
  stop) step "stop OpenStack" stop_all ;;
  stop-service) [ -n "${2:-}" ] || die "usage: $0 stop-service NAME"; step "stop $2" stop_service "$2" ;;
  start-service) [ -n "${2:-}" ] || die "usage: $0 start-service NAME"; step "start $2" start_service "$2" ;;
  status) status ;;
  *) echo "usage: $0 start [fast|full] | stop | stop-service NAME | start-service NAME | status | check" >&2; exit 2 ;;
esac
