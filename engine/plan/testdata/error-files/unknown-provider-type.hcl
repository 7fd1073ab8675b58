pipeline "p" {}
provider "dokker" "nat" {} # ERROR: Unknown provider type
service "web" {
  command = ["x"]
}
