"""A test project on the real Keystone, for the harness's clusters (hack/workload.sh, hack/capi.sh).

tenant(name, password, description) makes (or finds) the project NAME and its member user NAME with that
password, grants it member (Nova, Neutron, Cinder) and load-balancer_member (Octavia's role-based policy), and
returns the admin's session (from the OS_* variables of openrc) and the project.
"""
import os

from keystoneauth1 import exceptions as ksexc
from keystoneauth1 import session
from keystoneauth1.identity import v3
from keystoneclient.v3 import client as ksclient


def admin_session():
    return session.Session(auth=v3.Password(
        auth_url=os.environ["OS_AUTH_URL"], username=os.environ["OS_USERNAME"],
        password=os.environ["OS_PASSWORD"], project_name=os.environ["OS_PROJECT_NAME"],
        user_domain_name=os.environ["OS_USER_DOMAIN_NAME"],
        project_domain_name=os.environ["OS_PROJECT_DOMAIN_NAME"]))


def tenant(name, password, description):
    admin = admin_session()
    ks = ksclient.Client(session=admin)
    project = next(iter(ks.projects.list(name=name)), None) or ks.projects.create(
        name, "default", description=description)
    user = next(iter(ks.users.list(name=name)), None)
    if user is None:
        user = ks.users.create(name, domain="default", password=password, default_project=project)
    else:
        ks.users.update(user, password=password, default_project=project)
    for rname in ("member", "load-balancer_member"):
        role = next(iter(ks.roles.list(name=rname)), None)
        if role is None:
            try:
                role = ks.roles.create(rname)
            except ksexc.Conflict:  # made in between by the other script (testenv up starts both together)
                role = next(iter(ks.roles.list(name=rname)))
        ks.roles.grant(role, user=user, project=project)
    return admin, project


def tenant_session(name, password, project):
    """The project's own session: its member user, scoped to it."""
    return session.Session(auth=v3.Password(auth_url=os.environ["OS_AUTH_URL"], username=name,
                                            password=password, project_id=project.id,
                                            user_domain_id="default"))
