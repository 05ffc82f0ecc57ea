"""Deploying the replica set to a cluster as manifests (deploy.k8s). Sits beside engines/ and cloud/."""
